package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifestDir holds the manifests, relative to this package.
const manifestDir = "kubernetes"

// The two Jobs the README names; everything else is found through their
// references (subdomain, volumes, secretKeyRef), so that a dangling
// reference fails.
const (
	agentJobName = "rdmafabric-agent"
	coordJobName = "rdmafabric-coordinator"
)

// minTokenLen is rdmapeer's shortest accepted token (cmd/rdmapeer).
const minTokenLen = 16

// tokenEnv is the variable both commands read the token from.
const tokenEnv = "RDMA_PEER_TOKEN"

// manifests are the decoded objects of manifestDir, by name.
type manifests struct {
	jobs       map[string]*batchv1.Job
	services   map[string]*corev1.Service
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

// splitDocuments splits a YAML stream at its "---" lines.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	for line := range bytes.Lines(data) {
		if string(bytes.TrimRight(line, " \t\r\n")) == "---" {
			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.Write(line)
	}
	return append(docs, cur.Bytes())
}

// decodeStrict decodes one YAML document into obj as the API server does
// under strict field validation: the YAML is turned into JSON without
// looking at obj (so a number is not quietly made a string), then decoded
// case-sensitively, refusing unknown and repeated fields. encoding/json's
// DisallowUnknownFields alone would accept "CompletionMode" for
// "completionMode", which the API server refuses.
func decodeStrict(doc []byte, obj any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(j, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// decodeObject decodes a document into the k8s.io/api type of its
// apiVersion and kind; it returns nil for a document with no object (only
// comments).
func decodeObject(doc []byte) (any, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	if string(bytes.TrimSpace(j)) == "null" {
		return nil, nil
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return nil, fmt.Errorf("apiVersion and kind: %w", err)
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "batch/v1 Job":
		obj = new(batchv1.Job)
	case "v1 Service":
		obj = new(corev1.Service)
	case "v1 ConfigMap":
		obj = new(corev1.ConfigMap)
	case "v1 Secret":
		obj = new(corev1.Secret)
	default:
		return nil, fmt.Errorf("unknown kind %q of apiVersion %q", tm.Kind, tm.APIVersion)
	}
	if err := decodeStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	return obj, nil
}

// loadManifests decodes every document of every .yaml file of
// manifestDir, failing t on any error, a nameless or namespaced object,
// or an object given twice.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no manifests in %s", manifestDir)
	yml, err := filepath.Glob(filepath.Join(manifestDir, "*.yml"))
	require.NoError(t, err)
	require.Empty(t, yml, "name manifests *.yaml, so that this test reads them")

	m := &manifests{
		jobs:       map[string]*batchv1.Job{},
		services:   map[string]*corev1.Service{},
		configMaps: map[string]*corev1.ConfigMap{},
		secrets:    map[string]*corev1.Secret{},
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for i, doc := range splitDocuments(data) {
			where := fmt.Sprintf("%s, document %d", file, i+1)
			obj, err := decodeObject(doc)
			require.NoError(t, err, where)
			if obj == nil {
				continue
			}
			var meta *metav1.ObjectMeta
			var added bool
			switch o := obj.(type) {
			case *batchv1.Job:
				meta, added = &o.ObjectMeta, put(m.jobs, o.Name, o)
			case *corev1.Service:
				meta, added = &o.ObjectMeta, put(m.services, o.Name, o)
			case *corev1.ConfigMap:
				meta, added = &o.ObjectMeta, put(m.configMaps, o.Name, o)
			case *corev1.Secret:
				meta, added = &o.ObjectMeta, put(m.secrets, o.Name, o)
			}
			require.NotEmpty(t, meta.Name, "%s: no metadata.name", where)
			assert.Empty(t, validation.IsDNS1123Subdomain(meta.Name), "%s: metadata.name %q", where, meta.Name)
			assert.Empty(t, meta.Namespace, "%s: a namespace; leave it to kubectl -n", where)
			require.True(t, added, "%s: %s is defined twice", where, meta.Name)
		}
	}
	return m
}

// put adds v to m under name unless name is there already.
func put[V any](m map[string]V, name string, v V) bool {
	if _, dup := m[name]; dup {
		return false
	}
	m[name] = v
	return true
}

// job returns the Job name.
func (m *manifests) job(t *testing.T, name string) *batchv1.Job {
	t.Helper()
	j, ok := m.jobs[name]
	require.True(t, ok, "no Job %s in %s", name, manifestDir)
	return j
}

// container returns the container of job that runs command.
func container(t *testing.T, job *batchv1.Job, command string) *corev1.Container {
	t.Helper()
	var found *corev1.Container
	for i, c := range job.Spec.Template.Spec.Containers {
		if len(c.Command) > 0 && path.Base(c.Command[0]) == command {
			require.Nil(t, found, "Job %s: two containers run %s", job.Name, command)
			found = &job.Spec.Template.Spec.Containers[i]
		}
	}
	require.NotNil(t, found, "Job %s: no container runs %s", job.Name, command)
	return found
}

// flagValue returns the value of the Go-style flag name in args, given
// as -name value, -name=value or with two dashes.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		for _, dash := range []string{"-", "--"} {
			if a == dash+name && i+1 < len(args) {
				return args[i+1], true
			}
			if v, ok := strings.CutPrefix(a, dash+name+"="); ok {
				return v, true
			}
		}
	}
	return "", false
}

// hasBoolFlag tells whether the boolean flag name is set in args.
func hasBoolFlag(args []string, name string) bool {
	return slices.Contains(args, "-"+name) || slices.Contains(args, "--"+name) ||
		slices.Contains(args, "-"+name+"=true") || slices.Contains(args, "--"+name+"=true")
}

// mountOf returns the volume mount of c that holds file, and file's path
// inside the volume.
func mountOf(c *corev1.Container, file string) (corev1.VolumeMount, string, bool) {
	file = path.Clean(file)
	for _, vm := range c.VolumeMounts {
		dir := path.Clean(vm.MountPath)
		if vm.SubPath != "" && file == dir {
			return vm, vm.SubPath, true
		}
		if rel, ok := strings.CutPrefix(file, dir+"/"); ok && vm.SubPath == "" {
			return vm, rel, true
		}
	}
	return corev1.VolumeMount{}, "", false
}

// volume returns the pod volume name.
func volume(t *testing.T, pod *corev1.PodSpec, name string) *corev1.Volume {
	t.Helper()
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	require.Failf(t, "no volume", "volume %q is mounted but not defined", name)
	return nil
}

// configMapFile returns the ConfigMap and key that container c of job
// reads as file, failing t unless file is in a mounted ConfigMap of
// manifestDir that has the key.
func (m *manifests) configMapFile(t *testing.T, job *batchv1.Job, c *corev1.Container, file string) (*corev1.ConfigMap, string) {
	t.Helper()
	vm, rel, ok := mountOf(c, file)
	require.True(t, ok, "Job %s: %s is in no volume mount of container %s", job.Name, file, c.Name)
	vol := volume(t, &job.Spec.Template.Spec, vm.Name)
	require.NotNil(t, vol.ConfigMap, "Job %s: %s is in volume %s, not a ConfigMap", job.Name, file, vm.Name)
	key := rel
	if items := vol.ConfigMap.Items; len(items) > 0 {
		i := slices.IndexFunc(items, func(k corev1.KeyToPath) bool { return path.Clean(k.Path) == rel })
		require.GreaterOrEqual(t, i, 0, "Job %s: %s is not among the items of volume %s", job.Name, file, vm.Name)
		key = items[i].Key
	}
	cm, ok := m.configMaps[vol.ConfigMap.Name]
	require.True(t, ok, "Job %s mounts ConfigMap %s, which is not in %s", job.Name, vol.ConfigMap.Name, manifestDir)
	_, ok = cm.Data[key]
	require.True(t, ok, "ConfigMap %s has no key %q (%s of Job %s)", cm.Name, key, file, job.Name)
	return cm, key
}

// nodeNames reads a nodes file as rdmafabric and rdmapeer do: one name a
// line, '#' starting a comment, white space and blank lines ignored.
func nodeNames(content string) []string {
	var names []string
	for line := range strings.Lines(content) {
		line, _, _ = strings.Cut(line, "#")
		if name := strings.TrimSpace(line); name != "" {
			names = append(names, name)
		}
	}
	return names
}

// agentSetup is what the contract tests share: the agent Job, its
// container, the Service that names its pods and the names of its nodes
// file.
type agentSetup struct {
	m     *manifests
	job   *batchv1.Job
	c     *corev1.Container
	svc   *corev1.Service
	port  corev1.ServicePort
	nodes []string
	cm    *corev1.ConfigMap
	key   string
}

func loadAgent(t *testing.T) *agentSetup {
	t.Helper()
	m := loadManifests(t)
	a := &agentSetup{m: m, job: m.job(t, agentJobName)}
	a.c = container(t, a.job, "rdmapeer")
	sub := a.job.Spec.Template.Spec.Subdomain
	require.NotEmpty(t, sub, "Job %s: no subdomain, so its pods have no DNS names", a.job.Name)
	svc, ok := m.services[sub]
	require.True(t, ok, "Job %s: subdomain %q names no Service of %s", a.job.Name, sub, manifestDir)
	a.svc = svc
	require.Len(t, svc.Spec.Ports, 1, "Service %s: one port, rdmapeer's", svc.Name)
	a.port = svc.Spec.Ports[0]
	file, ok := flagValue(a.c.Args, "nodes-file")
	require.True(t, ok, "agent args %q: no -nodes-file", a.c.Args)
	a.cm, a.key = m.configMapFile(t, a.job, a.c, file)
	a.nodes = nodeNames(a.cm.Data[a.key])
	require.NotEmpty(t, a.nodes, "ConfigMap %s, key %s: no node names", a.cm.Name, a.key)
	return a
}

// listenPort returns the port of rdmapeer's -listen address.
func listenPort(t *testing.T, args []string) int32 {
	t.Helper()
	listen, ok := flagValue(args, "listen")
	require.True(t, ok, "agent args %q: no -listen", args)
	_, port, err := net.SplitHostPort(listen)
	require.NoError(t, err, "-listen %q", listen)
	p, err := strconv.ParseInt(port, 10, 32)
	require.NoError(t, err, "-listen %q", listen)
	return int32(p)
}

// TestManifestsDecodeStrictly decodes every manifest into its k8s.io/api
// type, refusing unknown fields and kinds, and checks that the objects
// the README names are there.
func TestManifestsDecodeStrictly(t *testing.T) {
	m := loadManifests(t)
	assert.Contains(t, m.jobs, agentJobName)
	assert.Contains(t, m.jobs, coordJobName)
	assert.Len(t, m.services, 1)
	assert.Len(t, m.configMaps, 1)
	assert.Len(t, m.secrets, 1)
}

// TestAgentJobIsIndexedOverNodesFile checks that the agent Job runs one
// pod per name of its nodes file, and that the names are the pods' DNS
// names: <job>-<index>.<service>, index 0 to N-1.
func TestAgentJobIsIndexedOverNodesFile(t *testing.T) {
	a := loadAgent(t)
	spec := a.job.Spec
	require.NotNil(t, spec.CompletionMode, "Job %s: no completionMode", a.job.Name)
	assert.Equal(t, batchv1.IndexedCompletion, *spec.CompletionMode)
	n := int32(len(a.nodes))
	require.NotNil(t, spec.Completions, "Job %s: no completions", a.job.Name)
	require.NotNil(t, spec.Parallelism, "Job %s: no parallelism", a.job.Name)
	assert.Equal(t, n, *spec.Completions, "completions vs the %d names of ConfigMap %s", n, a.cm.Name)
	assert.Equal(t, n, *spec.Parallelism, "parallelism vs the %d names of ConfigMap %s", n, a.cm.Name)
	for i, name := range a.nodes {
		assert.Equal(t, fmt.Sprintf("%s-%d.%s", a.job.Name, i, a.svc.Name), name, "line %d of the nodes file", i+1)
	}
	assert.Equal(t, corev1.RestartPolicyNever, a.job.Spec.Template.Spec.RestartPolicy)
}

// TestAgentServiceIsHeadless checks the Service that gives the agent pods
// their names: headless, named as the pods' subdomain, selecting the
// agent pods and not the coordinator's, on rdmapeer's port.
func TestAgentServiceIsHeadless(t *testing.T) {
	a := loadAgent(t)
	assert.Equal(t, corev1.ClusterIPNone, a.svc.Spec.ClusterIP, "Service %s is not headless", a.svc.Name)
	assert.Empty(t, validation.IsDNS1035Label(a.svc.Name), "Service name %q", a.svc.Name)
	require.NotEmpty(t, a.svc.Spec.Selector, "Service %s selects nothing", a.svc.Name)
	sel := labels.SelectorFromSet(a.svc.Spec.Selector)
	assert.True(t, sel.Matches(labels.Set(a.job.Spec.Template.Labels)),
		"Service %s selector %v vs agent pod labels %v", a.svc.Name, a.svc.Spec.Selector, a.job.Spec.Template.Labels)
	coord := a.m.job(t, coordJobName)
	assert.False(t, sel.Matches(labels.Set(coord.Spec.Template.Labels)),
		"Service %s also selects the coordinator's pods", a.svc.Name)
	assert.Equal(t, corev1.ProtocolTCP, a.port.Protocol)
	if tp := a.port.TargetPort; tp.IntVal != 0 || tp.StrVal != "" {
		assert.Equal(t, a.port.Port, tp.IntVal, "Service %s: targetPort differs from port; the coordinator dials the pods, at port", a.svc.Name)
	}
}

// TestAgentContainer checks rdmapeer's command line and what it needs
// from the node: -agent, -listen on the Service's port, -nodes-file in
// the mounted ConfigMap, IPC_LOCK, an RDMA device.
func TestAgentContainer(t *testing.T) {
	a := loadAgent(t)
	c := a.c
	assert.True(t, hasBoolFlag(c.Args, "agent"), "agent args %q: no -agent", c.Args)
	port := listenPort(t, c.Args)
	assert.Equal(t, a.port.Port, port, "-listen vs Service %s port", a.svc.Name)
	for _, p := range c.Ports {
		assert.Equal(t, port, p.ContainerPort, "containerPort vs -listen")
	}
	require.NotNil(t, c.SecurityContext, "agent container: no securityContext")
	require.NotNil(t, c.SecurityContext.Capabilities, "agent container: no capabilities")
	assert.Contains(t, c.SecurityContext.Capabilities.Add, corev1.Capability("IPC_LOCK"))
	rdma := false
	for name, q := range c.Resources.Limits {
		if strings.HasPrefix(string(name), "rdma/") {
			rdma = true
			assert.GreaterOrEqual(t, q.Value(), int64(1), "limit %s", name)
		}
	}
	assert.True(t, rdma, "agent container: no rdma/ resource limit in %v", c.Resources.Limits)
}

// envRef matches a $(NAME) reference, which the kubelet expands from the
// variables defined before it.
var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// TestAgentNodeName checks that RDMA_NODE_NAME, as each agent pod sees
// it, is that agent's name in the nodes file.
func TestAgentNodeName(t *testing.T) {
	a := loadAgent(t)
	for i, want := range a.nodes {
		vars := map[string]string{}
		for _, e := range a.c.Env {
			var v string
			switch {
			case e.ValueFrom == nil:
				v = envRef.ReplaceAllStringFunc(e.Value, func(ref string) string {
					if val, ok := vars[ref[2:len(ref)-1]]; ok {
						return val
					}
					return ref
				})
			case e.ValueFrom.FieldRef != nil:
				switch p := e.ValueFrom.FieldRef.FieldPath; p {
				case "metadata.annotations['" + batchv1.JobCompletionIndexAnnotation + "']",
					"metadata.labels['" + batchv1.JobCompletionIndexAnnotation + "']":
					v = strconv.Itoa(i)
				case "metadata.name":
					v = fmt.Sprintf("%s-%d-abcde", a.job.Name, i) // a random suffix
				case "spec.nodeName":
					v = fmt.Sprintf("host%d", i)
				default:
					continue
				}
			default:
				continue
			}
			vars[e.Name] = v
		}
		got, ok := vars["RDMA_NODE_NAME"]
		require.True(t, ok, "agent container: no RDMA_NODE_NAME")
		assert.Equal(t, want, got, "RDMA_NODE_NAME of pod %d", i)
	}
}

// TestAgentsOnDistinctNodes checks the required anti-affinity that keeps
// two agents off one node.
func TestAgentsOnDistinctNodes(t *testing.T) {
	a := loadAgent(t)
	aff := a.job.Spec.Template.Spec.Affinity
	require.NotNil(t, aff, "agent pods: no affinity")
	require.NotNil(t, aff.PodAntiAffinity, "agent pods: no podAntiAffinity")
	podLabels := labels.Set(a.job.Spec.Template.Labels)
	found := false
	for _, term := range aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey != corev1.LabelHostname || term.LabelSelector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		require.NoError(t, err)
		if sel.Matches(podLabels) && len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
			found = true
		}
	}
	assert.True(t, found, "no required anti-affinity term on %s selecting the agent pods (labels %v)", corev1.LabelHostname, podLabels)
}

// TestTokenFromSecret checks that both Jobs read RDMA_PEER_TOKEN from the
// same key of the Secret, and that the Secret holds a placeholder
// rdmapeer refuses, never a usable token.
func TestTokenFromSecret(t *testing.T) {
	m := loadManifests(t)
	var ref *corev1.SecretKeySelector
	for _, j := range []struct{ job, command string }{{agentJobName, "rdmapeer"}, {coordJobName, "rdmafabric"}} {
		job := m.job(t, j.job)
		c := container(t, job, j.command)
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == tokenEnv })
		require.GreaterOrEqual(t, i, 0, "Job %s: no %s", job.Name, tokenEnv)
		e := c.Env[i]
		assert.Empty(t, e.Value, "Job %s: %s written in the manifest", job.Name, tokenEnv)
		require.NotNil(t, e.ValueFrom, "Job %s: %s not from a Secret", job.Name, tokenEnv)
		require.NotNil(t, e.ValueFrom.SecretKeyRef, "Job %s: %s not from a Secret", job.Name, tokenEnv)
		r := e.ValueFrom.SecretKeyRef
		assert.False(t, r.Optional != nil && *r.Optional, "Job %s: %s is optional", job.Name, tokenEnv)
		if ref == nil {
			ref = r
		} else {
			assert.Equal(t, ref.Name, r.Name, "Jobs read %s from different Secrets", tokenEnv)
			assert.Equal(t, ref.Key, r.Key, "Jobs read %s from different keys", tokenEnv)
		}
		s, ok := m.secrets[r.Name]
		require.True(t, ok, "Job %s: Secret %s is not in %s", job.Name, r.Name, manifestDir)
		tok, ok := s.StringData[r.Key]
		if !ok {
			var b []byte
			b, ok = s.Data[r.Key]
			tok = string(b)
		}
		require.True(t, ok, "Secret %s has no key %q", s.Name, r.Key)
		assert.Less(t, len(tok), minTokenLen, "Secret %s holds a usable token; ship a placeholder rdmapeer refuses", s.Name)
	}
}

// TestCoordinatorJob checks rdmafabric run's command line against the
// agents' (the same nodes file, the Service's port), its outputs on a
// writable volume, and a single attempt.
func TestCoordinatorJob(t *testing.T) {
	a := loadAgent(t)
	job := a.m.job(t, coordJobName)
	c := container(t, job, "rdmafabric")
	require.NotEmpty(t, c.Args, "coordinator: no args")
	assert.Equal(t, "run", c.Args[0], "coordinator args %q: not rdmafabric run", c.Args)

	file, ok := flagValue(c.Args, "nodes-file")
	require.True(t, ok, "coordinator args %q: no -nodes-file", c.Args)
	cm, key := a.m.configMapFile(t, job, c, file)
	assert.Equal(t, a.cm.Name, cm.Name, "the coordinator's nodes file is not the agents'")
	assert.Equal(t, a.key, key, "the coordinator's nodes file is not the agents'")

	port, ok := flagValue(c.Args, "port")
	require.True(t, ok, "coordinator args %q: no -port", c.Args)
	assert.Equal(t, strconv.Itoa(int(a.port.Port)), port, "-port vs Service %s port", a.svc.Name)

	for _, f := range []string{"o", "json", "heatmap"} {
		out, ok := flagValue(c.Args, f)
		if !assert.True(t, ok, "coordinator args %q: no -%s", c.Args, f) {
			continue
		}
		vm, _, ok := mountOf(c, out)
		if assert.True(t, ok, "-%s %s is in no volume mount", f, out) {
			assert.False(t, vm.ReadOnly, "-%s %s is on a read-only mount", f, out)
			v := volume(t, &job.Spec.Template.Spec, vm.Name)
			assert.True(t, v.EmptyDir != nil || v.PersistentVolumeClaim != nil, "-%s %s: volume %s is neither emptyDir nor a PVC", f, out, vm.Name)
		}
	}

	require.NotNil(t, job.Spec.BackoffLimit, "coordinator: no backoffLimit (the default retries 6 times)")
	assert.Equal(t, int32(0), *job.Spec.BackoffLimit)
	assert.Equal(t, corev1.RestartPolicyNever, job.Spec.Template.Spec.RestartPolicy)
	assert.Equal(t, a.c.Image, c.Image, "the coordinator and the agents run different images")
}

// agentJobYAML is a valid Indexed Job; TestStrictDecodingFails spoils it.
const agentJobYAML = `apiVersion: batch/v1
kind: Job
metadata:
  name: rdmafabric-agent
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 4
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: rdmapeer
          image: example
          args: ["-agent", "-listen", ":18515"]
`

// TestStrictDecodingFails shows that the decoding refuses what the API
// server's strict field validation refuses, so that TestManifests… can
// fail: each case changes one thing of a Job that decodes.
func TestStrictDecodingFails(t *testing.T) {
	obj, err := decodeObject([]byte(agentJobYAML))
	require.NoError(t, err, "the unspoilt Job")
	require.IsType(t, &batchv1.Job{}, obj)
	assert.Equal(t, batchv1.IndexedCompletion, *obj.(*batchv1.Job).Spec.CompletionMode)

	for _, tc := range []struct{ name, old, new, want string }{
		{"misspelled field", "completionMode:", "completionsMode:", "completionsMode"},
		{"wrongly cased field", "completionMode:", "CompletionMode:", "CompletionMode"},
		{"unknown nested field", "restartPolicy:", "restartPolicies:", "restartPolicies"},
		{"repeated field", "  parallelism: 4\n", "  parallelism: 4\n  parallelism: 2\n", "parallelism"},
		{"number for a string", `":18515"]`, `18515]`, "string"},
		{"unknown kind", "kind: Job", "kind: Jobs", "unknown kind"},
		{"unknown apiVersion", "batch/v1", "batch/v2", "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, agentJobYAML, tc.old)
			doc := strings.Replace(agentJobYAML, tc.old, tc.new, 1)
			_, err := decodeObject([]byte(doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestSplitDocuments checks the splitting at "---" lines.
func TestSplitDocuments(t *testing.T) {
	docs := splitDocuments([]byte("# c\na: 1\n---\nb: 2\n--- \n\n---\nc: '---'\n"))
	require.Len(t, docs, 4)
	assert.Equal(t, "# c\na: 1\n", string(docs[0]))
	assert.Equal(t, "b: 2\n", string(docs[1]))
	assert.Equal(t, "\n", string(docs[2]))
	assert.Equal(t, "c: '---'\n", string(docs[3]))
	obj, err := decodeObject(docs[2])
	assert.NoError(t, err)
	assert.Nil(t, obj, "an empty document")
}
