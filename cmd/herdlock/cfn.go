package main

import (
	"fmt"
	"io"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// writeCFN prints a template holding the table that create-table makes,
// kept when the stack is deleted or the table replaced: YAML, or JSON
// (which CloudFormation reads as well) with asJSON.
func writeCFN(w io.Writer, table string, ttl, asJSON bool) error {
	if asJSON {
		return writeJSON(w, cfnTemplate(table, ttl))
	}
	return writeCFNYAML(w, table, ttl)
}

// cfnTemplate is the template of writeCFNYAML as a JSON document.
func cfnTemplate(table string, ttl bool) map[string]any {
	props := map[string]any{
		"TableName":            table,
		"BillingMode":          "PAY_PER_REQUEST",
		"AttributeDefinitions": []any{map[string]any{"AttributeName": storeapi.AttrLockKey, "AttributeType": "S"}},
		"KeySchema":            []any{map[string]any{"AttributeName": storeapi.AttrLockKey, "KeyType": "HASH"}},
	}
	if ttl {
		props["TimeToLiveSpecification"] = map[string]any{"AttributeName": storeapi.AttrTTL, "Enabled": true}
	}
	return map[string]any{
		"AWSTemplateFormatVersion": "2010-09-09",
		"Description":              "herdlock lock table",
		"Resources": map[string]any{
			"LockTable": map[string]any{
				"Type":                "AWS::DynamoDB::Table",
				"DeletionPolicy":      "Retain",
				"UpdateReplacePolicy": "Retain",
				"Properties":          props,
			},
		},
		"Outputs": map[string]any{
			"LockTableName": map[string]any{"Value": map[string]any{"Ref": "LockTable"}},
			"LockTableArn":  map[string]any{"Value": map[string]any{"Fn::GetAtt": []any{"LockTable", "Arn"}}},
		},
	}
}

// writeCFNYAML prints the template as YAML, with comments.
func writeCFNYAML(w io.Writer, table string, ttl bool) error {
	ttlBlock := ""
	if ttl {
		ttlBlock = fmt.Sprintf(`      TimeToLiveSpecification:
        # Clean-up of old items only: herdlock never uses it as expiry.
        AttributeName: %s
        Enabled: true
`, storeapi.AttrTTL)
	}
	_, err := fmt.Fprintf(w, `AWSTemplateFormatVersion: "2010-09-09"
Description: herdlock lock table
Resources:
  LockTable:
    Type: AWS::DynamoDB::Table
    # Deleting the table resets every fence: keep it.
    DeletionPolicy: Retain
    UpdateReplacePolicy: Retain
    Properties:
      TableName: %s
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - AttributeName: %s
          AttributeType: S
      KeySchema:
        - AttributeName: %s
          KeyType: HASH
%sOutputs:
  LockTableName:
    Value: !Ref LockTable
  LockTableArn:
    Value: !GetAtt LockTable.Arn
`, table, storeapi.AttrLockKey, storeapi.AttrLockKey, ttlBlock)
	return err
}
