module example.com/sluice-receiver

go 1.21
