module github.com/baton-dev/baton/client

go 1.26.8

require github.com/baton-dev/baton/problem v0.0.0-00010101000000-000000000000

replace github.com/baton-dev/baton/problem => ../problem
