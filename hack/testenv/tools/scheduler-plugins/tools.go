//go:build tools

// Package tools pins the commands build.sh builds, so `go mod tidy` keeps their dependencies.
package tools

import (
	_ "sigs.k8s.io/scheduler-plugins/cmd/controller"
	_ "sigs.k8s.io/scheduler-plugins/cmd/scheduler"
)
