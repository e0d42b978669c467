module github.com/baton-dev/baton/problem

go 1.26.8
