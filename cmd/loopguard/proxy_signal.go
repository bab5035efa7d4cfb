package main

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// startProxy starts cmd and passes SIGTERM and SIGINT on to it, so that the
// proxy shuts down gracefully when this process is told to.
func startProxy(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		for s := range sig {
			cmd.Process.Signal(s)
		}
	}()
	return nil
}
