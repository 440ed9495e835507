// A cert-manager controller for the real-world tests (test/real/cert-manager.test.ts), built by
// scripts/real-deps.sh against the pinned github.com/cert-manager/cert-manager module.
//
// Why not upstream's binary: its main (cmd/controller, module .../controller-binary) is a nested module
// with a `replace => ../../` and is not on the module proxy. This program does what its Run does
// (cert-manager/cert-manager cmd/controller/app/controller.go): build the ContextFactory, construct the
// registered controllers, start the shared informers. Only the controllers a CA issuer needs are
// linked (the Certificate state machine, the approver, the CA and SelfSigned request signers, the
// issuer readiness loops); no ACME, no ingress-shim, no leader election, no metrics listener.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cert-manager/cert-manager/pkg/controller"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	clusterNS := flag.String("cluster-resource-namespace", "cert-manager", "where ClusterIssuers keep their Secrets")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *clusterNS); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

func run(rootCtx context.Context, kubeconfig, clusterNS string) error {
	factory, err := controller.NewContextFactory(rootCtx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: clusterNS},
		// upstream defaults (internal/apis/config/controller/v1alpha1/defaults.go): 1h, then 32h
		CertificateOptions: controller.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}
	cctx, err := factory.Build()
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(rootCtx)
	for name, construct := range controller.Known() {
		iface, err := construct(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		fmt.Fprintln(os.Stderr, "cert-manager-controller: starting", name)
		g.Go(func() error { return iface.Run(2, gctx) })
	}
	cctx.SharedInformerFactory.Start(gctx.Done())
	cctx.KubeSharedInformerFactory.Start(gctx.Done())
	cctx.HTTP01ResourceMetadataInformersFactory.Start(gctx.Done())
	return g.Wait()
}
