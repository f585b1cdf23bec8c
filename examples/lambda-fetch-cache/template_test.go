package main

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/awslabs/goformation/v7/intrinsics"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"github.com/herdlock/herdlock/lockcore"
	"github.com/herdlock/herdlock/lockcore/storeapi"
	"gopkg.in/yaml.v3"
)

const templatePath = "../../template.yaml"

// goformation v7.14.9 does not know two properties of
// AWS::Serverless::Function that a real deployment should have; the test
// checks them on the raw YAML, then removes them from a copy for
// goformation.
var unknownToGoformation = []string{"LoggingConfig", "RecursiveLoop"}

// parseTemplate returns the template parsed by goformation, with !Ref and
// !GetAtt kept as "Ref:Name" and "GetAtt:Name.Attr" instead of resolved to
// empty strings, and the raw properties of FetchFunction that goformation
// rejects.
func parseTemplate(t *testing.T) (*cloudformation.Template, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	props := mapping(t, &root, "Resources", "FetchFunction", "Properties")
	removed := map[string]any{}
	for i := 0; i < len(props.Content); {
		key := props.Content[i].Value
		if slices.Contains(unknownToGoformation, key) {
			var v any
			if err := props.Content[i+1].Decode(&v); err != nil {
				t.Fatal(err)
			}
			removed[key] = v
			props.Content = slices.Delete(props.Content, i, i+2)
			continue
		}
		i += 2
	}
	stripped, err := yaml.Marshal(&root)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := goformation.ParseYAMLWithOptions(stripped, &intrinsics.ProcessorOptions{
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
			"Ref": refHandler,
			"Fn::GetAtt": func(_ string, input, _ any) any {
				if parts, ok := input.([]any); ok {
					s := make([]string, len(parts))
					for i, p := range parts {
						s[i] = fmt.Sprint(p)
					}
					return "GetAtt:" + strings.Join(s, ".")
				}
				return fmt.Sprintf("GetAtt:%v", input)
			},
		},
	})
	if err != nil {
		t.Fatalf("goformation: %v", err)
	}
	return tmpl, removed
}

// refHandler keeps a reference as "Ref:Name", except AWS::NoValue, which
// removes the property as CloudFormation does, and a Number parameter,
// which becomes its default so that integer properties still decode.
func refHandler(_ string, input, tmpl any) any {
	name := fmt.Sprint(input)
	if name == "AWS::NoValue" {
		return nil
	}
	params, _ := lookup(tmpl, "Parameters").(map[string]any)
	if p, ok := params[name].(map[string]any); ok && p["Type"] == "Number" {
		return p["Default"]
	}
	return "Ref:" + name
}

// mapping walks the YAML document down the given keys.
func mapping(t *testing.T, n *yaml.Node, keys ...string) *yaml.Node {
	t.Helper()
	if n.Kind == yaml.DocumentNode {
		n = n.Content[0]
	}
	for _, k := range keys {
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			t.Fatalf("template.yaml: no %s", strings.Join(keys, "."))
		}
		n = next
	}
	return n
}

func TestTemplateRejectsWithoutWorkaround(t *testing.T) {
	// The workaround above is needed: if goformation learns these
	// properties, this test says so and the workaround can go.
	raw, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := goformation.ParseYAML(raw); err == nil {
		t.Error("goformation now parses LoggingConfig and RecursiveLoop: remove the stripping in parseTemplate")
	}
}

func TestTemplateFunction(t *testing.T) {
	tmpl, removed := parseTemplate(t)
	fn, err := tmpl.GetServerlessFunctionWithName("FetchFunction")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Runtime", deref(fn.Runtime), "provided.al2023"},
		{"Architectures", fmt.Sprint(fn.Architectures), "[arm64]"},
		{"Handler", deref(fn.Handler), "bootstrap"},
		{"Tracing", deref(fn.Tracing), "Active"},
		{"FunctionUrlConfig.AuthType", fn.FunctionUrlConfig != nil && fn.FunctionUrlConfig.AuthType == "AWS_IAM", true},
		{"Metadata.BuildMethod", fn.AWSCloudFormationMetadata["BuildMethod"], "makefile"},
		{"CodeUri (where the Makefile is)", codeURI(fn), "."},
		{"RecursiveLoop", removed["RecursiveLoop"], "Terminate"},
		{"LoggingConfig.LogFormat", lookup(removed, "LoggingConfig", "LogFormat"), "JSON"},
	}
	for _, tt := range checks {
		if tt.got != tt.want {
			t.Errorf("FetchFunction %s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if fn.MemorySize == nil || *fn.MemorySize < 128 || fn.Timeout == nil || *fn.Timeout < 10 || *fn.Timeout > 900 {
		t.Errorf("FetchFunction MemorySize %v, Timeout %v: want at least 128 MB and 10 to 900 s", fn.MemorySize, fn.Timeout)
	}
}

// The function is built by `make build-FetchFunction` (BuildMethod
// makefile, CodeUri "."): the root Makefile must have that target, building
// this example the way provided.al2023 wants it.
func TestMakefileBuildsTheFunction(t *testing.T) {
	raw, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := string(raw)
	i := strings.Index(mk, "\nbuild-FetchFunction:")
	if i < 0 {
		t.Fatal("Makefile has no build-FetchFunction target")
	}
	recipe := mk[i:]
	if j := strings.Index(recipe, "\n\n"); j > 0 {
		recipe = recipe[:j]
	}
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "-tags lambda.norpc", "$(ARTIFACTS_DIR)/bootstrap", "./examples/lambda-fetch-cache"} {
		if !strings.Contains(recipe, want) {
			t.Errorf("build-FetchFunction recipe lacks %q:\n%s", want, recipe)
		}
	}
	if !strings.Contains(recipe, "GOARCH=$(LAMBDA_GOARCH)") {
		t.Errorf("build-FetchFunction recipe does not build for $(LAMBDA_GOARCH), the template's architecture:\n%s", recipe)
	}
}

func codeURI(fn *serverless.Function) string {
	if fn.CodeUri == nil || fn.CodeUri.String == nil {
		return ""
	}
	return *fn.CodeUri.String
}

func TestTemplateEnvironmentMatchesConfig(t *testing.T) {
	tmpl, _ := parseTemplate(t)
	fn, err := tmpl.GetServerlessFunctionWithName("FetchFunction")
	if err != nil {
		t.Fatal(err)
	}
	if fn.Environment == nil {
		t.Fatal("FetchFunction has no Environment")
	}
	vars := fn.Environment.Variables
	for k := range vars {
		if !slices.Contains(fetchcache.AllEnv, k) {
			t.Errorf("template sets %s, which the function does not read", k)
		}
	}
	for _, k := range fetchcache.RequiredEnv {
		if vars[k] == "" {
			t.Errorf("template does not set %s, which the function requires", k)
		}
	}
	if _, ok := vars[fetchcache.EnvDynamoDBEndpoint]; ok {
		t.Errorf("template sets %s, which is for local runs only", fetchcache.EnvDynamoDBEndpoint)
	}
	if vars[fetchcache.EnvLockTable] != "Ref:LockTable" || vars[fetchcache.EnvCacheTable] != "Ref:CacheTable" {
		t.Errorf("table variables = %q, %q; want Ref:LockTable, Ref:CacheTable",
			vars[fetchcache.EnvLockTable], vars[fetchcache.EnvCacheTable])
	}
	if err := checkLoadable(vars); err != nil {
		t.Errorf("the template's environment does not load: %v", err)
	}
}

// checkLoadable loads the template's environment as the function would,
// with references replaced by plausible values.
func checkLoadable(vars map[string]string) error {
	env := map[string]string{}
	for k, v := range vars {
		switch {
		case k == fetchcache.EnvUpstreamURL && strings.HasPrefix(v, "Ref:"):
			v = "https://upstream.example.com"
		case k == fetchcache.EnvCacheTTL && strings.HasPrefix(v, "Ref:"):
			v = "5m"
		}
		env[k] = v
	}
	_, err := fetchcache.LoadConfig(func(k string) string { return env[k] })
	return err
}

func TestTemplateTables(t *testing.T) {
	tmpl, _ := parseTemplate(t)
	tests := []struct {
		name     string
		resource string
		key      string
		ttl      string
	}{
		{"lock table matches lockcore.DynamoStore", "LockTable", storeapi.AttrLockKey, storeapi.AttrTTL},
		{"cache table matches fetchcache.Cache", "CacheTable", fetchcache.CacheAttrID, fetchcache.CacheAttrTTL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := tmpl.GetDynamoDBTableWithName(tt.resource)
			if err != nil {
				t.Fatal(err)
			}
			if deref(tab.BillingMode) != "PAY_PER_REQUEST" {
				t.Errorf("BillingMode = %q, want PAY_PER_REQUEST", deref(tab.BillingMode))
			}
			if len(tab.KeySchema) != 1 || tab.KeySchema[0].AttributeName != tt.key || tab.KeySchema[0].KeyType != "HASH" {
				t.Errorf("KeySchema = %+v, want one HASH key %s", tab.KeySchema, tt.key)
			}
			if len(tab.AttributeDefinitions) != 1 || tab.AttributeDefinitions[0].AttributeName != tt.key || tab.AttributeDefinitions[0].AttributeType != "S" {
				t.Errorf("AttributeDefinitions = %+v, want %s of type S", tab.AttributeDefinitions, tt.key)
			}
			ttl := tab.TimeToLiveSpecification
			if ttl == nil || deref(ttl.AttributeName) != tt.ttl || !ttl.Enabled {
				t.Errorf("TimeToLiveSpecification = %+v, want %s enabled", ttl, tt.ttl)
			}
		})
	}
}

// TestTemplateIAMMatchesCode checks the function's role against what the
// code and its event sources use: the DynamoDB methods of
// lockcore.DynamoAPI on the lock table and fetchcache.CacheAPI on the
// cache table, the SQS actions of the event source mapping on the refresh
// queue, log writes to the function's log group and X-Ray writes, each on
// that resource only; nothing else, and no policies generated by SAM.
func TestTemplateIAMMatchesCode(t *testing.T) {
	tmpl, _ := parseTemplate(t)
	fn, err := tmpl.GetServerlessFunctionWithName("FetchFunction")
	if err != nil {
		t.Fatal(err)
	}
	// goformation fills every member of the Policies union that the YAML
	// decodes into; with a Role, SAM generates no role and takes no
	// policies, so none may be set.
	if deref(fn.Role) != "GetAtt:FetchFunctionRole.Arn" || fn.Policies != nil {
		t.Fatalf("Role %q, Policies %+v: want the written-out FetchFunctionRole and no SAM policies", deref(fn.Role), fn.Policies)
	}
	role, err := tmpl.GetIAMRoleWithName("FetchFunctionRole")
	if err != nil {
		t.Fatal(err)
	}
	if len(role.ManagedPolicyArns) != 0 {
		t.Errorf("role has managed policies %q, want inline documents only", role.ManagedPolicyArns)
	}
	if s := fmt.Sprint(role.AssumeRolePolicyDocument); !strings.Contains(s, "lambda.amazonaws.com") || !strings.Contains(s, "sts:AssumeRole") {
		t.Errorf("AssumeRolePolicyDocument %s, want lambda.amazonaws.com to assume it", s)
	}
	got := map[string][]string{} // resource -> actions
	for _, p := range role.Policies {
		stmts, _ := lookup(p.PolicyDocument, "Statement").([]any)
		for _, st := range stmts {
			m, ok := st.(map[string]any)
			if !ok || m["Effect"] != "Allow" {
				t.Fatalf("statement %v: want an Allow object", st)
			}
			for _, res := range strings1(m["Resource"]) {
				got[res] = append(got[res], strings1(m["Action"])...)
				if res == "GetAtt:LockTable.Arn" && slices.Contains(strings1(m["Action"]), "dynamodb:PutItem") {
					// Only announcement items may be put (see storeapi.AnnouncementKey).
					like := lookup(m["Condition"], "ForAllValues:StringLike", "dynamodb:LeadingKeys")
					if keys := strings1(like); len(strings1(m["Action"])) != 1 || !slices.Equal(keys, []string{"*#announce-*"}) {
						t.Errorf("PutItem on the lock table: statement %v, want PutItem alone, on leading keys *#announce-* only", m)
					}
				}
			}
		}
	}
	want := map[string][]string{
		"GetAtt:LockTable.Arn":             slices.Sorted(slices.Values(append(dynamoActions(reflect.TypeFor[lockcore.DynamoAPI]()), "dynamodb:PutItem"))),
		"GetAtt:CacheTable.Arn":            dynamoActions(reflect.TypeFor[fetchcache.CacheAPI]()),
		"GetAtt:RefreshQueue.Arn":          {"sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"},
		"GetAtt:RefreshFifoQueue.Arn":      {"sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"},
		"GetAtt:FetchFunctionLogGroup.Arn": {"logs:CreateLogStream", "logs:PutLogEvents"},
		"*":                                {"xray:PutTelemetryRecords", "xray:PutTraceSegments"},
	}
	for res := range got {
		sort.Strings(got[res])
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("policy grants %v, want %v", got, want)
	}
	for res, actions := range got {
		for _, a := range actions {
			if strings.Contains(a, "*") || (!strings.HasPrefix(a, "xray:") && res == "*") {
				t.Errorf("policy grants %s on %s: no wildcards but for X-Ray", a, res)
			}
		}
	}
}

// dynamoActions returns "dynamodb:" + every method of the interface type,
// sorted.
func dynamoActions(iface reflect.Type) []string {
	var out []string
	for m := range iface.Methods() {
		out = append(out, "dynamodb:"+m.Name)
	}
	sort.Strings(out)
	return out
}

func strings1(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, len(v))
		for i, x := range v {
			out[i] = fmt.Sprint(x)
		}
		return out
	}
	return nil
}

func lookup(m any, keys ...string) any {
	v := m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
