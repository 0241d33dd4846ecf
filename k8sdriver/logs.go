package k8sdriver

import (
	"context"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// maxLogBytes bounds what the driver reads of one container's output.
const maxLogBytes = 1 << 20

// KubeletLogs reads logs through the pods/log subresource.
type KubeletLogs struct {
	Client kubernetes.Interface
	// SplitStreams asks for stdout and stderr separately; it needs the
	// PodLogsQuerySplitStreams feature gate (alpha in 1.32). Without it both
	// fields hold the interleaved output, whose last line is still the
	// wrapper's result line.
	SplitStreams bool
}

// ContainerLogs implements LogSource.
func (k KubeletLogs) ContainerLogs(ctx context.Context, r LogRequest) (Logs, error) {
	if !k.SplitStreams {
		all, err := k.read(ctx, r, "")
		return Logs{Stdout: all, Stderr: all}, err
	}
	out, err := k.read(ctx, r, corev1.LogStreamStdout)
	if err != nil {
		return Logs{}, err
	}
	errOut, err := k.read(ctx, r, corev1.LogStreamStderr)
	return Logs{Stdout: out, Stderr: errOut}, err
}

func (k KubeletLogs) read(ctx context.Context, r LogRequest, stream string) (string, error) {
	opts := &corev1.PodLogOptions{Container: r.Container, Previous: r.Previous, LimitBytes: ptr(int64(maxLogBytes))}
	if r.TailLines > 0 {
		opts.TailLines = ptr(r.TailLines)
	}
	if stream != "" {
		opts.Stream = ptr(stream)
	}
	rc, err := k.Client.CoreV1().Pods(r.Namespace).GetLogs(r.Pod, opts).Stream(ctx)
	if err != nil {
		return "", mapErr("read logs of pod "+r.Pod, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxLogBytes))
	if err != nil {
		return "", mapErr("read logs of pod "+r.Pod, err)
	}
	return string(data), nil
}

func ptr[T any](v T) *T { return &v }
