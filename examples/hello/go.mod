module example.com/hello

go 1.26.0

require (
	github.com/spindle-lab/spindle v0.0.0
	golang.org/x/sync v0.25.0
)

require (
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)

replace github.com/spindle-lab/spindle => ../..
