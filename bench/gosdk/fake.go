//go:build fakeclient

// The fake clientset as claim source (--claim-client fake); see main.go for
// why it is not in the default build.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

func init() {
	newFakeClient = func(driverName string, numClaims int) kubernetes.Interface {
		objects := make([]runtime.Object, 0, numClaims)
		for i := 0; i < numClaims; i++ {
			objects = append(objects, benchClaim(driverName, i))
		}
		return fake.NewClientset(objects...)
	}
}
