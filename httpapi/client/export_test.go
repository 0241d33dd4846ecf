package client

// Routes is the route table, for the tests that check it against the server.
var Routes = routes[:]
