package wire

import "time"

// Namespace is the answer of POST .../ensure.
type Namespace struct {
	Namespace string `json:"namespace"`
	// Created is true when this call created the namespace.
	Created bool `json:"created"`
}

// NamespaceList is the operators' list of tenants.
type NamespaceList struct {
	Namespaces []NamespaceInfo `json:"namespaces"`
}

// NamespaceInfo is one ensured namespace with its number of functions.
type NamespaceInfo struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	Functions int       `json:"functions"`
}
