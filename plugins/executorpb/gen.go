// Package executorpb is the generated gRPC code of the executor plugin
// protocol (executor.proto). Regenerate it with `go generate` in this
// directory; it needs protoc and the plugins
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
package executorpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative executor.proto
