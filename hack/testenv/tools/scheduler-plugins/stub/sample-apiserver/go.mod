// An empty stand-in: k8s.io/kubernetes requires k8s.io/sample-apiserver, whose v0.31.8 the module
// proxy does not serve; no package of it is built, so only this go.mod is read.
module k8s.io/sample-apiserver

go 1.22.0
