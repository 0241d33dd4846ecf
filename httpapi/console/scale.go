package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
)

// scaleView is a function page's Scaling section: how the function scales,
// the defaults in force where it sets none, and what runs now.
type scaleView struct {
	Config domain.ScaleConfig
	// DefaultConcurrency is the runtime's, in force while Config.Concurrency is 0.
	DefaultConcurrency int
	// MaxInstances and MaxConcurrency bound the form's fields.
	MaxInstances, MaxConcurrency int
	// Now is what runs of the function on this server; nil when it cannot say.
	Now *wire.Instances
}

// newScaleView is the Scaling section of f's page.
func (c *Console) newScaleView(f domain.Function) scaleView {
	v := scaleView{Config: f.Config.Scale, DefaultConcurrency: domain.DefaultConcurrency(f.Config.Runtime),
		MaxInstances: domain.MaxInstances, MaxConcurrency: domain.MaxInstanceConcurrency}
	if c.cfg.Instances != nil {
		v.Now = c.cfg.Instances(f.Namespace, f.Name)
	}
	return v
}

// scaleFields are the form's fields, the API's names of the settings.
var scaleFields = []string{"min_instances", "max_instances", "concurrency"}

// setScale serves POST /console/{ns}/functions/{fn}/scale with the form
// fields min_instances, max_instances and concurrency (command.UpdateFunction,
// as the API's PUT with those fields): a field left empty keeps its value.
// Like the async configuration they are the function's: no version is made.
func (c *Console) setScale(w http.ResponseWriter, r *http.Request, s session) error {
	ns, name := r.PathValue("ns"), r.PathValue("fn")
	var patch command.FunctionPatch
	for i, dst := range []**int{&patch.MinInstances, &patch.MaxInstances, &patch.Concurrency} {
		raw := strings.TrimSpace(r.PostFormValue(scaleFields[i]))
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil {
			return domain.FieldErrorf(scaleFields[i], "%.20q is not a whole number", raw)
		}
		*dst = &n
	}
	if _, err := c.cfg.Commands.UpdateFunction(r.Context(), metadata(s), command.UpdateFunctionInput{Ref: refOf(ns, name), Patch: patch}); err != nil {
		return err
	}
	http.Redirect(w, r, "/console/"+ns+"/functions/"+name+"#scale", http.StatusSeeOther)
	return nil
}
