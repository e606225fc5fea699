// Command pause is the sandbox ("pause") container of the pods that scripts/kube-up.sh's kubelet
// runs: it holds the pod's namespaces, reaps orphans when it is the pod's PID 1, and exits on
// SIGINT or SIGTERM, as Kubernetes' own build/pause/linux/pause.c does. Built here from the
// standard library because no registry (registry.k8s.io/pause) is reachable. See: issue 25.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (ccm-assets, scripts/kube/pause)")
		return
	}
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
