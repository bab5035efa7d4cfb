module github.com/loopguard/loopguard/proxy

go 1.25

require github.com/loopguard/loopguard v0.0.0

replace github.com/loopguard/loopguard => ..
