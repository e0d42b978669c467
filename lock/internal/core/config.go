package core

import (
	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/config"
)

// Config tunes an Engine (package config says what each setting does).
// Start from DefaultConfig.
type Config = config.Config

// EmbeddedMember is what the engine needs of the etcd member it is
// embedded with (store.Member says what each method is for).
type EmbeddedMember = store.Member

// DefaultConfig returns the defaults that docs/API.md documents.
func DefaultConfig() Config { return config.Default() }

// NewestFormat is the newest storage format this engine reads and writes
// (config.NewestFormat says what each format is).
const NewestFormat = config.NewestFormat
