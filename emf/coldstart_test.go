package emf

import (
	"errors"
	"reflect"
	"testing"
)

func TestCaptureColdStart(t *testing.T) {
	m, buf := newTest(t, WithDefaultDimensions(map[string]string{"env": "prod"}))
	if err := m.CaptureColdStart("bad\x00name"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("CaptureColdStart() of an invalid name = %v, want ErrInvalid", err)
	}
	mustNil(t, m.CaptureColdStart("orders-fn"))
	mustNil(t, m.CaptureColdStart("orders-fn")) // not cold any more
	mustNil(t, m.Add("OrderPlaced", Count, 1))
	mustNil(t, m.SetProperty("request_id", "r1"))
	docs := flushDocs(t, m, buf)
	if len(docs) != 2 {
		t.Fatalf("Flush() wrote %d documents, want 2", len(docs))
	}
	cold := docs[0]
	if want := [][]string{{"function_name", "service"}}; !reflect.DeepEqual(cold.DimSets, want) {
		t.Errorf("cold start dimension sets = %v, want %v", cold.DimSets, want)
	}
	if want := map[string]string{"function_name": "orders-fn", "service": "svc"}; !reflect.DeepEqual(cold.Dimensions, want) {
		t.Errorf("cold start dimensions = %v, want %v", cold.Dimensions, want)
	}
	if want := map[string][]float64{"ColdStart": {1}}; !reflect.DeepEqual(cold.Values, want) {
		t.Errorf("cold start values = %v, want %v", cold.Values, want)
	}
	if len(cold.Root) != 4 {
		t.Errorf("cold start document has %d members, want 4: no properties", len(cold.Root))
	}
	if want := map[string][]float64{"OrderPlaced": {1}}; !reflect.DeepEqual(docs[1].Values, want) {
		t.Errorf("second document values = %v, want %v", docs[1].Values, want)
	}

	// A batch of the same Metrics is not cold either.
	b := m.NewBatch()
	mustNil(t, b.CaptureColdStart("orders-fn"))
	mustNil(t, b.Add("m", Count, 1))
	mustNil(t, b.Flush())
	if docs, err := validateOutput(buf.Bytes()); err != nil || len(docs) != 1 {
		t.Errorf("batch after the cold start wrote %d documents (%v), want 1", len(docs), err)
	}

	// The cold start belongs to the Metrics, not to the process: no
	// package state. Another instance has its own.
	other, otherBuf := newTest(t)
	mustNil(t, other.CaptureColdStart("orders-fn"))
	mustNil(t, other.Add("m", Count, 1))
	if docs := flushDocs(t, other, otherBuf); len(docs) != 2 {
		t.Errorf("second instance wrote %d documents, want 2", len(docs))
	}
}

func TestCaptureColdStartOnly(t *testing.T) {
	clearEnv(t)
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "from-env")
	m, buf := newTest(t)
	mustNil(t, m.CaptureColdStart(""))
	mustNil(t, m.Flush())
	docs, err := validateOutput(buf.Bytes())
	mustNil(t, err)
	if len(docs) != 1 || docs[0].Dimensions["function_name"] != "from-env" {
		t.Errorf("documents = %+v, want one cold start for from-env", docs)
	}
}
