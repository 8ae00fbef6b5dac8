// Command cert-manager is the e2e suite's cert-manager: the controllers of
// github.com/cert-manager/cert-manager (the root module, the only one the Go
// module proxy serves) wired into one binary, for a self-signed or CA Issuer
// (or ClusterIssuer) issuing a Certificate into a Secret, and the CA injector
// for webhook configurations annotated cert-manager.io/inject-ca-from.
//
//	cert-manager controller [--kubeconfig F] [--namespace NS] [-v N] ...
//	cert-manager cainjector [--kubeconfig F] [--namespace NS] [-v N] ...
//	cert-manager --version
//
// It takes the flags cert-manager's Helm chart passes its controller and CA
// injector (those of features left out are accepted and ignored), and the
// image build-images.sh makes of it has one tag per program whose
// entrypoint names the subcommand: the chart's own Deployments run it with
// only their images swapped.
//
// Left out, compared with cert-manager's own binaries: ACME, Vault and
// Venafi issuers, ingress and Gateway shims, the CertificateSigningRequest
// controllers, leader election, the metrics and pprof servers, config files,
// and cert-manager's webhook (validation and the requester identity of
// CertificateRequests; the controllers do not need it). One replica only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Each package registers its controller (controller.Register) or its
	// issuer type (issuer.RegisterIssuer) in init.
	crapprover "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

const certManagerModule = "github.com/cert-manager/cert-manager"

// The controllers this binary runs by default: the issuer controllers, the
// Certificate pipeline (trigger -> key manager -> request manager -> issuing,
// plus readiness and revision history) and the CertificateRequest approver
// and signers for the two issuer types linked in.
var defaultControllers = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
	crapprover.ControllerName,
	crselfsigned.CRControllerName,
	crca.CRControllerName,
}

// version is the cert-manager release linked in, from the build info.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == certManagerModule {
				return m.Version
			}
		}
	}
	return "unknown"
}

type commonFlags struct {
	fs         *flag.FlagSet
	kubeconfig string
	master     string
	namespace  string
	healthz    string
}

func newCommonFlags(name string) *commonFlags {
	c := &commonFlags{fs: flag.NewFlagSet(name, flag.ExitOnError)}
	c.fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config)")
	c.fs.StringVar(&c.master, "master", "", "API server address, overriding the kubeconfig's")
	c.fs.StringVar(&c.namespace, "namespace", "", "watch only this namespace (default: all)")
	c.fs.StringVar(&c.healthz, "healthz-address", "", "serve GET /livez and /readyz (200) on this address; empty: off")
	// Leader election is left out (one replica); the chart names its namespace.
	c.fs.String("leader-election-namespace", "kube-system", "ignored: this build runs without leader election")
	klog.InitFlags(c.fs) // -v, -vmodule, ...
	return c
}

// serveHealthz answers 200 on /livez and /readyz until ctx ends.
func serveHealthz(ctx context.Context, g *errgroup.Group, addr string) error {
	if addr == "" {
		return nil
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("healthz listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	mux.HandleFunc("/livez", ok)
	mux.HandleFunc("/readyz", ok)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx) //nolint:contextcheck
	})
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	return nil
}

func runController(ctx context.Context, args []string) error {
	c := newCommonFlags("controller")
	controllers := c.fs.String("controllers", strings.Join(defaultControllers, ","),
		"comma-separated controllers to run; linked in: "+strings.Join(knownNames(), ","))
	clusterNS := c.fs.String("cluster-resource-namespace", "kube-system",
		"namespace of the Secrets that ClusterIssuers refer to")
	workers := c.fs.Int("concurrent-workers", 5, "workers per controller")
	maxChallenges := c.fs.Int("max-concurrent-challenges", 60, "ACME challenges at once (no ACME issuer is linked in)")
	c.fs.String("acme-http01-solver-image", "", "ignored: no ACME issuer is linked in")
	// cert-manager's controller serves its liveness probe here by default.
	c.fs.Lookup("healthz-address").DefValue = "0.0.0.0:9403"
	c.healthz = "0.0.0.0:9403"
	qps := c.fs.Float64("kube-api-qps", 20, "client QPS (when the API server has no priority and fairness)")
	burst := c.fs.Int("kube-api-burst", 50, "client burst")
	_ = c.fs.Parse(args)

	log := logf.FromContext(ctx)
	log.Info("starting cert-manager controller", "version", version())

	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         c.kubeconfig,
		APIServerHost:      c.master,
		KubernetesAPIQPS:   float32(*qps),
		KubernetesAPIBurst: *burst,
		Namespace:          c.namespace,
		IssuerOptions: controller.IssuerOptions{
			ClusterResourceNamespace: *clusterNS,
		},
		CertificateOptions: controller.CertificateOptions{
			// cert-manager's defaults (ControllerConfiguration v1alpha1).
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
		SchedulerOptions: controller.SchedulerOptions{MaxConcurrentChallenges: *maxChallenges},
	})
	if err != nil {
		return err
	}
	// The base context: its informer factories are the ones every controller
	// built from factory registers its informers with.
	base, err := factory.Build()
	if err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	if err := serveHealthz(gctx, g, c.healthz); err != nil {
		return err
	}
	known := controller.Known()
	for _, name := range strings.Split(*controllers, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if name == clusterissuers.ControllerName && c.namespace != "" {
			continue // cluster-scoped, as cert-manager does with --namespace
		}
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("unknown controller %q (linked in: %s)", name, strings.Join(knownNames(), ","))
		}
		iface, err := construct(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		log.Info("starting controller", "controller", name)
		g.Go(func() error { return iface.Run(*workers, gctx) })
	}
	// Start the informers after every controller has registered its own.
	base.SharedInformerFactory.Start(gctx.Done())
	base.KubeSharedInformerFactory.Start(gctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(gctx.Done())
	err = g.Wait()
	base.HTTP01ResourceMetadataInformersFactory.Shutdown()
	base.KubeSharedInformerFactory.Shutdown()
	base.SharedInformerFactory.Shutdown()
	return err
}

func knownNames() []string {
	var names []string
	for n := range controller.Known() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func runCAInjector(ctx context.Context, args []string) error {
	c := newCommonFlags("cainjector")
	kinds := c.fs.String("inject", "validatingwebhookconfiguration,mutatingwebhookconfiguration",
		"comma-separated kinds to inject into: validatingwebhookconfiguration, mutatingwebhookconfiguration, apiservice, customresourcedefinition")
	_ = c.fs.Parse(args)

	log := logf.FromContext(ctx)
	log.Info("starting cert-manager cainjector", "version", version())
	ctrl.SetLogger(log)

	// In-cluster config when both are empty.
	restConfig, err := clientcmd.BuildConfigFromFlags(c.master, c.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	restConfig.UserAgent = "cert-manager-cainjector/" + version()

	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	utilruntime.Must(apiext.AddToScheme(scheme))
	utilruntime.Must(apireg.AddToScheme(scheme))

	var namespaces map[string]cache.Config
	if c.namespace != "" {
		namespaces = map[string]cache.Config{c.namespace: {}}
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme: scheme,
		Cache: cache.Options{
			ReaderFailOnMissingInformer: true,
			DefaultNamespaces:           namespaces,
		},
		// Secrets are read directly, not cached (as cert-manager does).
		Client:                 client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: c.healthz,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if c.healthz != "" {
		ping := func(*http.Request) error { return nil }
		if err := mgr.AddHealthzCheck("ping", ping); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("ping", ping); err != nil {
			return err
		}
	}
	enabled := map[string]bool{}
	for _, k := range strings.Split(*kinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			enabled[k] = true
		}
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		Namespace:                    c.namespace,
		EnableCertificatesDataSource: true, // cert-manager.io/inject-ca-from
		EnabledReconcilersFor:        enabled,
	}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cert-manager controller|cainjector [flags] | --version")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf.InitLogs()
	defer logf.FlushLogs()

	var err error
	switch os.Args[1] {
	case "--version", "-version", "version":
		fmt.Printf("cert-manager %s (controller, cainjector)\n", version())
		return
	case "controller":
		err = runController(logf.NewContext(ctx, logf.Log, "controller"), os.Args[2:])
	case "cainjector":
		err = runCAInjector(logf.NewContext(ctx, logf.Log, "cainjector"), os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "unknown subcommand %q: controller, cainjector or --version\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		logf.FlushLogs()
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}
