package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/cloudwatch"
	"github.com/herdlock/herdlock/examples/lambda-fetch-cache/fetchcache"
	"gopkg.in/yaml.v3"
)

// lockMetrics are the metric names lockcore and lockmw emit.
var lockMetrics = []string{
	"LockTimeout", "LongRenewalCall", "StaleLock",
	"LockAcquisitionDuration", "LockHoldDuration", "LockRenewal",
	"LockReleaseDuration", "LockAcquisitionSuccess", "LockAcquisitionFailed",
	"LockAcquisitionError", "LockNotReleased", "LockAcquisitionWaitTimeout",
	"WaitForLock", "LockAcquisitionWaitDuration", "LockPollCount",
	"LockTakeover", "LockRetryAfterFailure", "LockLeaseLost", "LockSharedFailure",
	"LockEpisodeAttempts", "LockNotTried", "LockCoalesced", "LockCoalescedFallThrough", "LockCoalescedWaitDuration",
}

// rawNode returns the YAML node at the given keys of template.yaml.
func rawNode(t *testing.T, keys ...string) *yaml.Node {
	t.Helper()
	raw, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	return mapping(t, &root, keys...)
}

// metricsTarget returns where the function's metrics land: its namespace
// and service dimension, from its environment.
func metricsTarget(t *testing.T, tmpl *cloudformation.Template) (namespace, service string) {
	t.Helper()
	fn, err := tmpl.GetServerlessFunctionWithName("FetchFunction")
	if err != nil || fn.Environment == nil {
		t.Fatalf("FetchFunction environment: %v", err)
	}
	namespace, service = fn.Environment.Variables[fetchcache.EnvMetricsNamespace], fn.Environment.Variables["POWERTOOLS_SERVICE_NAME"]
	if namespace == "" || service == "" {
		t.Fatalf("FetchFunction namespace %q, service %q: want both set", namespace, service)
	}
	return namespace, service
}

func TestTemplateLogging(t *testing.T) {
	tmpl, _ := parseTemplate(t)
	for _, tt := range []struct{ key, ref string }{{"LogGroup", "FetchFunctionLogGroup"}, {"ApplicationLogLevel", "LogLevel"}} {
		n := rawNode(t, "Resources", "FetchFunction", "Properties", "LoggingConfig", tt.key)
		if n.Tag != "!Ref" || n.Value != tt.ref {
			t.Errorf("LoggingConfig.%s = %s %s, want !Ref %s", tt.key, n.Tag, n.Value, tt.ref)
		}
	}
	lg, err := tmpl.GetLogsLogGroupWithName("FetchFunctionLogGroup")
	if err != nil {
		t.Fatal(err)
	}
	retention := tmpl.Parameters["LogRetentionDays"]
	if lg.RetentionInDays == nil || retention.Default != float64(30) || float64(*lg.RetentionInDays) != retention.Default {
		t.Errorf("log group retention %v days, parameter default %v; want the parameter, default 30", deref(ptrString(lg.RetentionInDays)), retention.Default)
	}
	// Lambda drops JSON lines without a level (every EMF line) above INFO.
	level := tmpl.Parameters["LogLevel"]
	if level.Default != "INFO" {
		t.Errorf("LogLevel default = %v, want INFO", level.Default)
	}
	for _, v := range level.AllowedValues {
		if !slices.Contains([]any{"TRACE", "DEBUG", "INFO"}, v) {
			t.Errorf("LogLevel allows %v, which would drop the metrics: want TRACE, DEBUG or INFO only", v)
		}
	}
}

func ptrString(n *int) *string {
	if n == nil {
		return nil
	}
	s := fmt.Sprint(*n)
	return &s
}

func TestTemplateTablesRetained(t *testing.T) {
	tmpl, _ := parseTemplate(t)
	for _, name := range []string{"LockTable", "CacheTable"} {
		tab, err := tmpl.GetDynamoDBTableWithName(name)
		if err != nil {
			t.Fatal(err)
		}
		if tab.AWSCloudFormationDeletionPolicy != "Retain" || tab.AWSCloudFormationUpdateReplacePolicy != "Retain" {
			t.Errorf("%s DeletionPolicy %q, UpdateReplacePolicy %q; want Retain, Retain", name,
				tab.AWSCloudFormationDeletionPolicy, tab.AWSCloudFormationUpdateReplacePolicy)
		}
	}
	fn, err := tmpl.GetServerlessFunctionWithName("FetchFunction")
	if err != nil {
		t.Fatal(err)
	}
	if fn.ReservedConcurrentExecutions != nil {
		t.Errorf("ReservedConcurrentExecutions = %d with the default parameter, want none", *fn.ReservedConcurrentExecutions)
	}
}

// TestTemplateAlarms checks that the alarms watch metrics the code emits,
// where it emits them, and notify the topic parameter.
func TestTemplateAlarms(t *testing.T) {
	tmpl, _ := parseTemplate(t)
	namespace, service := metricsTarget(t, tmpl)
	alarms := tmpl.GetAllCloudWatchAlarmResources()
	var lock []string
	var lambdaErrors, lockThrottles, api5xx bool
	var deadLetters []string // the queue names whose depth an alarm watches
	for name, a := range alarms {
		for _, key := range []string{"AlarmActions", "OKActions"} {
			if !notifiesTopic(rawNode(t, "Resources", name, "Properties", key)) {
				t.Errorf("%s %s: want !If [HasAlarmTopic, [!Ref AlarmTopicArn], !Ref AWS::NoValue]", name, key)
			}
		}
		switch {
		case deref(a.Namespace) == namespace:
			if !slices.Contains(lockMetrics, deref(a.MetricName)) {
				t.Errorf("%s watches %s, which neither lockcore nor lockmw emits", name, deref(a.MetricName))
			}
			if len(a.Dimensions) != 1 || a.Dimensions[0].Name != "service" || a.Dimensions[0].Value != service {
				t.Errorf("%s dimensions %+v, want service=%s only, as the EMF lines carry", name, a.Dimensions, service)
			}
			lock = append(lock, deref(a.MetricName))
		case deref(a.Namespace) == "AWS/Lambda" && deref(a.MetricName) == "Errors":
			lambdaErrors = len(a.Dimensions) == 1 && a.Dimensions[0].Value == "Ref:FetchFunction"
		case deref(a.Namespace) == "AWS/SQS" && deref(a.MetricName) == "ApproximateNumberOfMessagesVisible":
			if len(a.Dimensions) == 1 && a.Dimensions[0].Name == "QueueName" {
				deadLetters = append(deadLetters, a.Dimensions[0].Value)
			}
		case deref(a.Namespace) == "AWS/ApiGateway" && deref(a.MetricName) == "5xx":
			api5xx = len(a.Dimensions) == 1 && a.Dimensions[0].Name == "ApiId" && a.Dimensions[0].Value == "Ref:RatesHttpApi"
		case a.Metrics != nil:
			lockThrottles = watchesLockTable(a.Metrics)
		default:
			t.Errorf("%s watches %s %s, which nothing here emits", name, deref(a.Namespace), deref(a.MetricName))
		}
	}
	for _, want := range []string{"LockTakeover", "LockLeaseLost", "LockAcquisitionWaitTimeout", "LockNotReleased"} {
		if !slices.Contains(lock, want) {
			t.Errorf("no alarm on %s", want)
		}
	}
	// An attempt after a published failure is the retry the protocol
	// intends: an alarm on it would fire on every upstream failure.
	if slices.Contains(lock, "LockRetryAfterFailure") {
		t.Errorf("an alarm watches %s, want only take-overs of abandoned leases alarmed", "LockRetryAfterFailure")
	}
	if !lambdaErrors {
		t.Error("no alarm on the function's Errors")
	}
	if !lockThrottles {
		t.Error("no alarm on throttling of the lock table")
	}
	slices.Sort(deadLetters)
	if want := []string{"GetAtt:RefreshDeadLetterQueue.QueueName", "GetAtt:RefreshFifoDeadLetterQueue.QueueName"}; !slices.Equal(deadLetters, want) {
		t.Errorf("alarms on the depth of %q, want one per refresh dead-letter queue %q", deadLetters, want)
	}
	if !api5xx {
		t.Error("no alarm on the HTTP API's 5xx answers")
	}
}

// notifiesTopic reports whether n is !If [HasAlarmTopic, [!Ref
// AlarmTopicArn], !Ref AWS::NoValue]. (goformation does not evaluate the
// condition over a parameter, so the raw YAML is checked.)
func notifiesTopic(n *yaml.Node) bool {
	if n.Tag != "!If" || len(n.Content) != 3 || n.Content[0].Value != "HasAlarmTopic" {
		return false
	}
	yes, no := n.Content[1], n.Content[2]
	return len(yes.Content) == 1 && yes.Content[0].Tag == "!Ref" && yes.Content[0].Value == "AlarmTopicArn" &&
		no.Tag == "!Ref" && no.Value == "AWS::NoValue"
}

func watchesLockTable(ms []cloudwatch.Alarm_MetricDataQuery) bool {
	n := 0
	for _, q := range ms {
		if q.MetricStat == nil || q.MetricStat.Metric.Namespace == nil || *q.MetricStat.Metric.Namespace != "AWS/DynamoDB" {
			continue
		}
		for _, d := range q.MetricStat.Metric.Dimensions {
			if d.Name == "TableName" && d.Value == "Ref:LockTable" {
				n++
			}
		}
	}
	return n == 2 // reads and writes
}

// TestTemplateDashboard checks that the dashboard's lock widgets read
// metrics lockcore emits, in the function's namespace and service.
func TestTemplateDashboard(t *testing.T) {
	tmpl, _ := parseTemplate(t)
	namespace, service := metricsTarget(t, tmpl)
	d, err := tmpl.GetCloudWatchDashboardWithName("Dashboard")
	if err != nil {
		t.Fatal(err)
	}
	// What Fn::Sub leaves for CloudFormation (${AWS::Region}, ${LockTable})
	// sits inside JSON strings.
	var body struct {
		Widgets []struct {
			Type       string
			Properties struct {
				Metrics [][]any
			}
		}
	}
	if err := json.Unmarshal([]byte(d.DashboardBody), &body); err != nil {
		t.Fatalf("DashboardBody is not JSON: %v", err)
	}
	var seen []string
	for _, w := range body.Widgets {
		for _, m := range w.Properties.Metrics {
			ns, _ := m[0].(string)
			if ns == "" || ns == "AWS/DynamoDB" || ns == "AWS/Lambda" {
				continue // an expression, or AWS's own metrics
			}
			if ns != namespace || len(m) < 4 || m[2] != "service" || m[3] != service {
				t.Errorf("dashboard metric %v: want namespace %s, service=%s", m, namespace, service)
				continue
			}
			name, _ := m[1].(string)
			if !slices.Contains(lockMetrics, name) {
				t.Errorf("dashboard shows %s, which neither lockcore nor lockmw emits", name)
			}
			seen = append(seen, name)
		}
	}
	for _, want := range []string{"LockAcquisitionSuccess", "LockAcquisitionFailed", "WaitForLock",
		"LockTakeover", "LockRetryAfterFailure", "LockAcquisitionWaitDuration", "LockPollCount"} {
		if !slices.Contains(seen, want) {
			t.Errorf("dashboard does not show %s", want)
		}
	}
}
