// Package deploy holds example manifests for running rdmafabric under
// Kubernetes; its test decodes them strictly into the k8s.io/api types.
//
// The manifests are in kubernetes/ (see kubernetes/README.md). The test
// decodes every document as the API server would with strict field
// validation (unknown, misspelled, wrongly cased or repeated fields fail)
// and checks that the pieces fit: the agents' Indexed Job, the headless
// Service that names its pods, the nodes file that lists those names, the
// token Secret, and the coordinator's Job.
package deploy
