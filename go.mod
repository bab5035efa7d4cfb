module github.com/loopguard/loopguard

go 1.25
