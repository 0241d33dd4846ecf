package store

// The SQL of the queries whose plans plan_test.go checks.
const (
	ReadNamespaceSinceSQL  = readNamespaceSinceSQL
	NamespaceHeadSQL       = namespaceHeadSQL
	InvocationHistogramSQL = invocationHistogramSQL
	InvocationMarkSQL      = invocationMarkSQL
)

// EncodeInvocationCopy is the writer's COPY encoding of invs, into buf.
func EncodeInvocationCopy(buf []byte, invs []Invocation) []byte {
	e := copyEncoder{buf: buf}
	e.invocations(invs)
	return e.buf
}

// PingAfterLoss is how long every connection is pinged after one was found broken.
const PingAfterLoss = pingAfterLoss
