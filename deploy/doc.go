// Package deploy holds what runs baton on a platform, and the tests that
// check it without one. kubernetes/ is a Kustomize base (kubectl apply -k
// deploy/kubernetes); its test renders it with kustomize's own Go API and
// decodes every object strictly into the pinned k8s.io/api types.
package deploy
