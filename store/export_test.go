package store

// The SQL of the queries whose plans plan_test.go checks.
const (
	ReadNamespaceSinceSQL  = readNamespaceSinceSQL
	NamespaceHeadSQL       = namespaceHeadSQL
	InvocationHistogramSQL = invocationHistogramSQL
	InvocationMarkSQL      = invocationMarkSQL
)
