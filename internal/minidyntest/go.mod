module github.com/herdlock/herdlock/internal/minidyntest

go 1.26.0

require (
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.74.0
	github.com/herdlock/herdlock v0.0.0-00010101000000-000000000000
	github.com/truora/minidyn v0.8.2
)

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0 // indirect
	github.com/aws/aws-sdk-go-v2/credentials v1.21.0 // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.25 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.12 // indirect
	github.com/aws/smithy-go v1.28.9 // indirect
)

replace github.com/herdlock/herdlock => ../..
