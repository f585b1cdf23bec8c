package lockcore

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/herdlock/herdlock/lockcore/storeapi"
)

// CheckStore returns an error matching [ErrConfig] when store is nil or
// holds a nil pointer, map, slice, function or channel: a typed nil, such as
// the *DynamoStore of a [NewDynamoStore] whose error was ignored, is a
// non-nil Store that would panic at its first call. It returns nil
// otherwise. [New] and the lockmw middleware check their store with it.
func CheckStore(store storeapi.Store) error {
	if store == nil {
		return &configError{errors.New("lockcore: store is required")}
	}
	if isNil(store) {
		return &configError{fmt.Errorf("lockcore: store is a nil %T (was the error of its constructor ignored?)", store)}
	}
	return nil
}

// isNil reports whether v is nil or an interface holding a nil value of a
// kind that can be nil.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
