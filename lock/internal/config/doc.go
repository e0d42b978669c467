// Package config is the engine's configuration (Config): its settings,
// their defaults and their checks, and the storage format a node reads
// and writes (NewestFormat). The engine (lock/internal/core) and its
// facade (lock) alias Config; nothing here depends on either.
package config
