module example.com/hello

go 1.26.0

require spindle v0.0.0

require golang.org/x/sys v0.50.0 // indirect

replace spindle => ../..
