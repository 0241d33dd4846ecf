// Package secrets keeps the values of namespace secrets encrypted at rest,
// by envelope encryption, and deletes them by crypto-shredding.
//
// # Keys
//
// Each namespace that has secrets has one data key (DEK, 32 random bytes):
// every version of every secret of the namespace is sealed with it,
// AES-256-GCM with a random 12-byte nonce, the additional data binding the
// ciphertext to its namespace, name, version and key_id, so it opens in no
// other row (secret_values). The DEK is stored only wrapped, AES-256-GCM
// under the operator's key-encryption key (KEK), the additional data binding
// it to its namespace and key_id (secret_keys: namespace, key_id, kek_id,
// wrapped). A Keyring holds the KEKs: the first wraps, every one unwraps;
// kek_id is a fingerprint of a KEK, never the key. The KEKs come from a key
// file or SLESS_SECRETS_KEY (KeyringFromEnv), never from the database.
//
// Secret events name a secret and its version, never its value: the command
// layer appends them in the transaction in which Vault.Seal stores the
// value, and Vault.Shred deletes it.
//
// # Deletion: crypto-shredding
//
// Deleting rows does not delete bytes: old row versions stay in table files
// until vacuumed, and in the WAL, in replicas and in backups for as long as
// they are kept. So Shred, besides deleting the secret's rows, gives the
// namespace a new DEK (a new key_id), seals the namespace's other values
// again under it and replaces the key row; when no secret remains, the key
// row is deleted. The deleted value's ciphertext, wherever a copy of it
// survives, is then sealed under a DEK that no current row holds.
//
// # Threat model
//
// The KEK protects against whoever reads the database without it: a dump or
// a backup, the table files and the WAL on disk or in an archive, a replica,
// the events table. None of them holds a value in the clear (a test scans
// the data directory for one), and a wrapped DEK is useless without the KEK.
//
// It does not protect against:
//
//   - a process that has both the KEK and the database: a sless server, or
//     whoever holds its key file and its database URL, can open every secret;
//   - a function, which sees its own secrets' values in the clear (that is
//     what they are for);
//   - an old copy of the database's bytes, for a secret deleted since: a
//     backup, archived WAL, a lagging replica, even the live table files
//     until vacuum reclaims the dead rows. Such a copy holds the secret's
//     ciphertext and, wrapped, the DEK it was sealed under, and whoever has
//     BOTH that copy AND the KEK that wrapped the DEK can open it (a test
//     shows it). Shred alone does not reach into copies: after a deletion
//     that matters, rotate the KEK (RotateKeyFile) and destroy every copy of
//     the old one; the old copies are then undecryptable in full;
//   - the memory of the running server: it holds the KEKs and a cache of
//     unwrapped DEKs, and the values it opens, while it uses them.
//
// # Rotation
//
// RotateKEK re-wraps every DEK under a new KEK online, a short transaction
// per namespace; RotateKeyFile does the whole sequence on a key file (see
// its doc). A keyring loaded from a file follows the file, so running
// servers pick up the new key without a restart.
//
// secrets imports domain, pgx and google/uuid.
package secrets
