module github.com/sluice-dev/sluice/clients/go

go 1.23

require github.com/segmentio/backo-go v1.1.0
