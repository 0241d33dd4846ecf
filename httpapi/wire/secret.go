package wire

import "time"

// Secret is a namespace secret as the API shows it: never its value.
type Secret struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Version   int       `json:"version" doc:"the newest version of the value; every set makes one"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// UsedBy names the functions whose configuration uses the secret.
	UsedBy []string `json:"used_by" doc:"functions whose configuration uses the secret"`
	// Rolled names the function versions a set made (only in its answer):
	// each function that uses the secret gets a version with the new value.
	Rolled []RolledFunction `json:"rolled,omitempty" doc:"function versions made by this set: each function using the secret runs the new value"`
}

// RolledFunction is a function version made because a secret it uses changed.
type RolledFunction struct {
	Function string `json:"function"`
	Version  int    `json:"version"`
}

// SecretList is the JSON answer of the secret listing.
type SecretList struct {
	Secrets []Secret `json:"secrets"`
}

// SetSecretRequest is the body of PUT .../secrets/{name}: the value as text,
// or as base64 for bytes that are not UTF-8 text; exactly one of them.
type SetSecretRequest struct {
	Value       *string `json:"value,omitempty" doc:"the value as text (write-only: never returned)"`
	ValueBase64 *string `json:"value_base64,omitempty" doc:"the value as standard base64, for binary values (write-only)"`
}
