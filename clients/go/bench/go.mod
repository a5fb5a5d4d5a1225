module github.com/sluice-dev/sluice/clients/go/bench

go 1.23

require (
	github.com/segmentio/analytics-go/v3 v3.3.0
	github.com/sluice-dev/sluice/clients/go v0.0.0
)

require (
	github.com/google/uuid v1.3.0 // indirect
	github.com/segmentio/backo-go v1.1.0 // indirect
)

replace github.com/sluice-dev/sluice/clients/go => ../
