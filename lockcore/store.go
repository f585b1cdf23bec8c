package lockcore

import "github.com/herdlock/herdlock/lockcore/storeapi"

// byOperator reports whether r is an operator's force-release (see
// [storeapi.OperatorReleaseReason]).
func byOperator(r storeapi.ReleaseRequest) bool {
	return r.Result == Failure && !r.KeepEpisode && r.FailReason == storeapi.OperatorReleaseReason
}
