package resources

import (
	"net/netip"

	"github.com/slessio/sless/domain"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	netv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
)

// Names of the per-tenant objects.
const (
	NetworkPolicyName = "sless-default-deny"
	QuotaName         = "sless-quota"
	LimitRangeName    = "sless-limits"
)

// metadataIP is the cloud metadata service: no function may reach it.
var metadataIP = netip.MustParseAddr("169.254.169.254")

// Tenant is what a tenant namespace holds besides functions.
type Tenant struct {
	Namespace     *corev1ac.NamespaceApplyConfiguration
	NetworkPolicy *netv1ac.NetworkPolicyApplyConfiguration
	Quota         *corev1ac.ResourceQuotaApplyConfiguration
	LimitRange    *corev1ac.LimitRangeApplyConfiguration
}

// TenantObjects returns the objects of a tenant namespace: the Namespace
// with Pod Security "restricted" enforced, a NetworkPolicy that denies all
// traffic but ingress from the control plane and egress to DNS, the
// internet (never domain.EgressBlocked: private, link-local with the cloud
// metadata address, reserved) and Config.EgressAllow, and the quota and
// default limits. It returns EINVALID for a bad namespace or configuration.
func TenantObjects(cfg Config, ns string) (Tenant, error) {
	cfg = cfg.WithDefaults()
	if err := domain.ValidateNamespace(ns); err != nil {
		return Tenant{}, err
	}
	tenantLabels := map[string]string{LabelManagedBy: ManagedBy, LabelComponent: "tenant"}
	nsLabels := map[string]string{
		LabelManagedBy:                               ManagedBy,
		LabelComponent:                               "tenant",
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/warn":            "restricted",
		"pod-security.kubernetes.io/audit":           "restricted",
	}
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	dns := intstr.FromInt32(53)
	egress := []*netv1ac.NetworkPolicyEgressRuleApplyConfiguration{
		netv1ac.NetworkPolicyEgressRule().
			WithTo(netv1ac.NetworkPolicyPeer().
				WithNamespaceSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"kubernetes.io/metadata.name": "kube-system"})).
				WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"k8s-app": "kube-dns"}))).
			WithPorts(netv1ac.NetworkPolicyPort().WithProtocol(udp).WithPort(dns),
				netv1ac.NetworkPolicyPort().WithProtocol(tcp).WithPort(dns)),
	}
	// The internet: everything but the blocked ranges.
	internet := netv1ac.IPBlock().WithCIDR("0.0.0.0/0")
	for _, blocked := range domain.EgressBlocked {
		internet.WithExcept(blocked.String())
	}
	egress = append(egress, netv1ac.NetworkPolicyEgressRule().WithTo(netv1ac.NetworkPolicyPeer().WithIPBlock(internet)))
	for _, r := range cfg.EgressAllow {
		if err := domain.CheckEgressRule(r); err != nil {
			return Tenant{}, domain.Errorf(domain.EINVALID, "k8sdriver: egress rule %s: %v", r, err)
		}
		if r.HostLoopback() {
			continue
		}
		block := netv1ac.IPBlock().WithCIDR(r.Prefix.Masked().String())
		if r.Prefix.Contains(metadataIP) && r.Prefix.Bits() < 32 {
			block.WithExcept(netip.PrefixFrom(metadataIP, 32).String())
		}
		rule := netv1ac.NetworkPolicyEgressRule().WithTo(netv1ac.NetworkPolicyPeer().WithIPBlock(block))
		if r.Port != 0 {
			port := intstr.FromInt32(int32(r.Port))
			rule.WithPorts(netv1ac.NetworkPolicyPort().WithProtocol(tcp).WithPort(port),
				netv1ac.NetworkPolicyPort().WithProtocol(udp).WithPort(port))
		}
		egress = append(egress, rule)
	}
	np := netv1ac.NetworkPolicy(NetworkPolicyName, ns).
		WithLabels(tenantLabels).
		WithSpec(netv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector()).
			WithPolicyTypes(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress).
			WithIngress(netv1ac.NetworkPolicyIngressRule().
				WithFrom(netv1ac.NetworkPolicyPeer().
					WithNamespaceSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"kubernetes.io/metadata.name": cfg.ControlPlaneNamespace})))).
			WithEgress(egress...))

	hard, err := resourceList(cfg.Quota)
	if err != nil {
		return Tenant{}, err
	}
	def, err := resourceList(cfg.LimitDefault)
	if err != nil {
		return Tenant{}, err
	}
	defReq, err := resourceList(cfg.LimitDefaultRequest)
	if err != nil {
		return Tenant{}, err
	}
	return Tenant{
		Namespace:     corev1ac.Namespace(ns).WithLabels(nsLabels),
		NetworkPolicy: np,
		Quota:         corev1ac.ResourceQuota(QuotaName, ns).WithLabels(tenantLabels).WithSpec(corev1ac.ResourceQuotaSpec().WithHard(hard)),
		LimitRange: corev1ac.LimitRange(LimitRangeName, ns).WithLabels(tenantLabels).WithSpec(corev1ac.LimitRangeSpec().
			WithLimits(corev1ac.LimitRangeItem().WithType(corev1.LimitTypeContainer).WithDefault(def).WithDefaultRequest(defReq))),
	}, nil
}
