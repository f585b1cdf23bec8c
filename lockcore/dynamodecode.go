package lockcore

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// attrDecoder reads the attributes of a stored lock item by their DynamoDB
// types. An attribute that is absent reads as its zero value (the item's
// optional attributes); one of the wrong type, or a number that is not a
// 64-bit integer, is the decoder's first error, and reads as zero.
type attrDecoder struct {
	av  map[string]types.AttributeValue
	err error
}

func (d *attrDecoder) fail(name, want string) {
	if d.err == nil {
		d.err = fmt.Errorf("attribute %s is not %s", name, want)
	}
}

// str reads a string (S) attribute.
func (d *attrDecoder) str(name string) string {
	v, ok := d.av[name]
	if !ok {
		return ""
	}
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		d.fail(name, "a string")
		return ""
	}
	return s.Value
}

// num reads a number (N) attribute holding a 64-bit integer.
func (d *attrDecoder) num(name string) int64 {
	v, ok := d.av[name]
	if !ok {
		return 0
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		d.fail(name, "a number")
		return 0
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		d.fail(name, "a 64-bit integer")
		return 0
	}
	return i
}

// boolean reads a boolean (BOOL) attribute.
func (d *attrDecoder) boolean(name string) bool {
	v, ok := d.av[name]
	if !ok {
		return false
	}
	b, ok := v.(*types.AttributeValueMemberBOOL)
	if !ok {
		d.fail(name, "a boolean")
		return false
	}
	return b.Value
}

// bytes reads a binary (B) attribute.
func (d *attrDecoder) bytes(name string) []byte {
	v, ok := d.av[name]
	if !ok {
		return nil
	}
	b, ok := v.(*types.AttributeValueMemberB)
	if !ok {
		d.fail(name, "binary")
		return nil
	}
	return b.Value
}
