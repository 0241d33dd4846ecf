// Command terraform-provider-sless is the Terraform provider of sless
// (source address slessio/sless): functions, triggers, jobs and secrets of
// the namespace of the configured token, through the sless REST API.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/slessio/sless/terraform-provider-sless/internal/provider"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	debug := flag.Bool("debug", false, "run the provider for a debugger (prints TF_REATTACH_PROVIDERS)")
	flag.Parse()
	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: provider.Address,
		Debug:   *debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
