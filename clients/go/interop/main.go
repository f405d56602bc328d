// Command interop is an interoperability client of the diarization service
// written in Go on Debian's gRPC (golang-google-grpc-dev 1.33) and
// github.com/golang/protobuf 1.3 (golang-goprotobuf-dev, whose protoc-gen-go
// generates the stubs with plugins=grpc), built offline in GOPATH mode
// (tests/go_interop_test.sh shows how).
//
// It checks, against a running server:
//   - grpc.health.v1: the server reports SERVING;
//   - server reflection: the services listed include diarization.v1.Diarization,
//     grpc.health.v1.Health and the reflection service itself, and the
//     Diarization service's file descriptor can be fetched by symbol;
//   - Diarize: a 16-bit PCM WAV file streamed in chunks gives exactly one
//     final result, with the request id echoed, the right audio duration,
//     segments inside the audio, and (with -expect_rttm) the same RTTM text
//     as a reference produced by another client.
//
// Security (docs/operations.md, "Security"): -tls_ca (and -tls_cert/-tls_key
// for mutual TLS) dial with TLS; -token or -token_file send
// "authorization: Bearer <token>" with every call. -expect_reflection=false
// expects reflection to be off (UNIMPLEMENTED), as it is by default on a
// server with tokens. -expect_code=Unauthenticated (or PermissionDenied, ...)
// expects the Diarize call to fail with that code instead of checking its
// result.
//
// Exit status 0 when every check passes; 1 with a message otherwise.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	diarizationv1 "diarization/v1"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
)

// bearerToken sends "authorization: Bearer <token>" with every call. It does
// not require transport security, so that a plaintext loopback server can be
// reached too (the server refuses tokens in clear off loopback).
type bearerToken string

func (t bearerToken) GetRequestMetadata(ctx context.Context, uri ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

func (t bearerToken) RequireTransportSecurity() bool { return false }

// grpcCode is the gRPC status code of err or of an error it wraps (this
// grpc-go's status.Code does not unwrap); OK for nil.
func grpcCode(err error) codes.Code {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if se, ok := e.(interface{ GRPCStatus() *status.Status }); ok {
			return se.GRPCStatus().Code()
		}
	}
	if err != nil {
		return codes.Unknown
	}
	return codes.OK
}

// dialOptions builds the transport and per-call credentials from the flags.
func dialOptions(caPath, certPath, keyPath, serverName, token, tokenFile string) ([]grpc.DialOption, error) {
	var opts []grpc.DialOption
	if caPath != "" || certPath != "" || keyPath != "" {
		cfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
		if caPath != "" {
			pem, err := os.ReadFile(caPath)
			if err != nil {
				return nil, fmt.Errorf("-tls_ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("-tls_ca=%s holds no PEM certificate", caPath)
			}
			cfg.RootCAs = pool
		}
		if (certPath == "") != (keyPath == "") {
			return nil, errors.New("-tls_cert and -tls_key go together (mutual TLS)")
		}
		if certPath != "" {
			pair, err := tls.LoadX509KeyPair(certPath, keyPath)
			if err != nil {
				return nil, fmt.Errorf("-tls_cert/-tls_key: %w", err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	} else {
		opts = append(opts, grpc.WithInsecure())
	}
	if tokenFile != "" {
		if token != "" {
			return nil, errors.New("give -token or -token_file, not both")
		}
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("-token_file: %w", err)
		}
		token = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
		if token == "" {
			return nil, fmt.Errorf("-token_file=%s is empty", tokenFile)
		}
	}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken(token)))
	}
	return opts, nil
}

type wavPCM struct {
	rate     int
	channels int
	data     []byte // interleaved little-endian int16
}

// readWav reads a canonical RIFF/WAVE file with 16-bit PCM samples.
func readWav(path string) (*wavPCM, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, errors.New("not a RIFF/WAVE file")
	}
	w := &wavPCM{}
	bits := 0
	for off := 12; off+8 <= len(b); {
		id := string(b[off : off+4])
		size := int(binary.LittleEndian.Uint32(b[off+4 : off+8]))
		body := off + 8
		end := body + size
		if end > len(b) {
			end = len(b) // tolerate streamed WAVs with placeholder sizes
		}
		switch id {
		case "fmt ":
			if size < 16 {
				return nil, errors.New("short fmt chunk")
			}
			format := binary.LittleEndian.Uint16(b[body:])
			w.channels = int(binary.LittleEndian.Uint16(b[body+2:]))
			w.rate = int(binary.LittleEndian.Uint32(b[body+4:]))
			bits = int(binary.LittleEndian.Uint16(b[body+14:]))
			if format != 1 && format != 0xFFFE {
				return nil, fmt.Errorf("WAV format %d is not PCM", format)
			}
		case "data":
			w.data = b[body:end]
		}
		off = body + size + size%2
	}
	if bits != 16 || w.channels < 1 || w.rate < 1 || w.data == nil {
		return nil, fmt.Errorf("need 16-bit PCM with a data chunk (bits=%d channels=%d rate=%d)", bits, w.channels, w.rate)
	}
	return w, nil
}

func checkHealth(ctx context.Context, conn *grpc.ClientConn) error {
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health: %v, want SERVING", resp.GetStatus())
	}
	return nil
}

// sendError turns the io.EOF that Send returns once the server has already
// ended the stream (a server without reflection answers UNIMPLEMENTED at once,
// and that can arrive before the first Send) into the stream's real status,
// which only Recv reports (grpc-go's ClientStream.SendMsg contract).
func sendError(stream grpc.ClientStream, err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	var m reflectionpb.ServerReflectionResponse
	if recvErr := stream.RecvMsg(&m); recvErr != nil {
		return recvErr
	}
	return err
}

// listServices asks the reflection service for the service list and the
// file that defines diarization.v1.Diarization.
func listServices(ctx context.Context, conn *grpc.ClientConn) ([]string, error) {
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("reflection: %w", err)
	}
	defer stream.CloseSend()
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: ""},
	}); err != nil {
		return nil, fmt.Errorf("reflection list: %w", sendError(stream, err))
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, fmt.Errorf("reflection list: %w", err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	sort.Strings(names)
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{
			FileContainingSymbol: "diarization.v1.Diarization"},
	}); err != nil {
		return nil, fmt.Errorf("reflection symbol: %w", sendError(stream, err))
	}
	resp, err = stream.Recv()
	if err != nil {
		return nil, fmt.Errorf("reflection symbol: %w", err)
	}
	if e := resp.GetErrorResponse(); e != nil {
		return nil, fmt.Errorf("reflection symbol: %s", e.GetErrorMessage())
	}
	if len(resp.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		return nil, errors.New("reflection returned no file descriptor for diarization.v1.Diarization")
	}
	return names, nil
}

func diarize(ctx context.Context, conn *grpc.ClientConn, w *wavPCM, requestID string, chunkMs int) (*diarizationv1.DiarizeResult, int, error) {
	stream, err := diarizationv1.NewDiarizationClient(conn).Diarize(ctx)
	if err != nil {
		return nil, 0, err
	}
	errc := make(chan error, 1)
	go func() {
		cfg := &diarizationv1.DiarizationConfig{
			Audio: &diarizationv1.AudioFormat{
				Encoding:     diarizationv1.AudioEncoding_LINEAR16,
				SampleRateHz: int32(w.rate),
				ChannelCount: int32(w.channels),
			},
			Options:   &diarizationv1.DiarizationOptions{PartialResults: true, PartialIntervalS: 1},
			RequestId: requestID,
			Uri:       "interop",
		}
		if err := stream.Send(&diarizationv1.DiarizeRequest{
			Request: &diarizationv1.DiarizeRequest_Config{Config: cfg}}); err != nil {
			errc <- err
			return
		}
		step := w.rate * w.channels * 2 * chunkMs / 1000
		step -= step % (2 * w.channels)
		for off := 0; off < len(w.data); off += step {
			end := off + step
			if end > len(w.data) {
				end = len(w.data)
			}
			if err := stream.Send(&diarizationv1.DiarizeRequest{
				Request: &diarizationv1.DiarizeRequest_Audio{Audio: w.data[off:end]}}); err != nil {
				errc <- err
				return
			}
		}
		errc <- stream.CloseSend()
	}()
	var final *diarizationv1.DiarizeResult
	partials := 0
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, partials, fmt.Errorf("Diarize: %w", err)
		}
		switch r := resp.GetResponse().(type) {
		case *diarizationv1.DiarizeResponse_Partial:
			if !r.Partial.GetProvisional() {
				return nil, partials, errors.New("a partial result is not marked provisional")
			}
			if final != nil {
				return nil, partials, errors.New("a partial result after the final one")
			}
			partials++
		case *diarizationv1.DiarizeResponse_Final:
			if final != nil {
				return nil, partials, errors.New("two final results")
			}
			final = r.Final
		}
	}
	if err := <-errc; err != nil {
		return nil, partials, fmt.Errorf("sending: %w", err)
	}
	if final == nil {
		return nil, partials, errors.New("the stream ended without a final result")
	}
	return final, partials, nil
}

func run() error {
	server := flag.String("server", "127.0.0.1:50051", "host:port")
	wavPath := flag.String("wav", "", "16-bit PCM WAV file to stream")
	expectRttm := flag.String("expect_rttm", "", "optional RTTM file the result must equal (uri 'interop')")
	chunkMs := flag.Int("chunk_ms", 200, "audio per message, ms")
	timeout := flag.Duration("timeout", 5*time.Minute, "overall deadline")
	tlsCA := flag.String("tls_ca", "", "PEM CA of the server certificate (TLS)")
	tlsCert := flag.String("tls_cert", "", "PEM client certificate (mutual TLS)")
	tlsKey := flag.String("tls_key", "", "its PEM private key")
	tlsServerName := flag.String("tls_server_name", "", "name to verify the server certificate against")
	token := flag.String("token", "", "bearer token sent with every call")
	tokenFile := flag.String("token_file", "", "file whose first line is the bearer token")
	expectReflection := flag.Bool("expect_reflection", true, "expect server reflection on (false: expect UNIMPLEMENTED)")
	expectCode := flag.String("expect_code", "", "expect Diarize to fail with this gRPC code (e.g. Unauthenticated)")
	flag.Parse()
	if *wavPath == "" {
		return errors.New("-wav is required")
	}
	w, err := readWav(*wavPath)
	if err != nil {
		return fmt.Errorf("%s: %w", *wavPath, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	opts, err := dialOptions(*tlsCA, *tlsCert, *tlsKey, *tlsServerName, *token, *tokenFile)
	if err != nil {
		return err
	}
	conn, err := grpc.DialContext(ctx, *server, append(opts, grpc.WithBlock())...)
	if err != nil {
		return fmt.Errorf("dial %s: %w", *server, err)
	}
	defer conn.Close()

	if err := checkHealth(ctx, conn); err != nil {
		return err
	}
	// With -expect_code the run is about a refused call: no reflection check.
	services, err := listServices(ctx, conn)
	if *expectCode != "" {
		fmt.Printf("reflection: not checked (%v)\n", grpcCode(err))
	} else if !*expectReflection {
		if grpcCode(err) != codes.Unimplemented {
			return fmt.Errorf("reflection: want UNIMPLEMENTED (off), got %v", err)
		}
		fmt.Println("reflection: off, as expected")
	} else {
		if err != nil {
			return err
		}
		fmt.Printf("services: %s\n", strings.Join(services, " "))
		for _, want := range []string{"diarization.v1.Diarization", "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} {
			found := false
			for _, s := range services {
				found = found || s == want
			}
			if !found {
				return fmt.Errorf("reflection does not list %s (got %v)", want, services)
			}
		}
	}

	const requestID = "go-interop-1"
	final, partials, err := diarize(ctx, conn, w, requestID, *chunkMs)
	if *expectCode != "" {
		got := grpcCode(err)
		if err == nil || got.String() != *expectCode {
			return fmt.Errorf("Diarize: want code %s, got %v", *expectCode, err)
		}
		fmt.Printf("Diarize refused with %s, as expected: %v\n", got, err)
		return nil
	}
	if err != nil {
		return err
	}
	wantS := float64(len(w.data)/(2*w.channels)) / float64(w.rate)
	if final.GetRequestId() != requestID {
		return fmt.Errorf("request_id %q, want %q", final.GetRequestId(), requestID)
	}
	if math.Abs(final.GetAudioS()-wantS) > 0.01 {
		return fmt.Errorf("audio_s %.3f, want %.3f", final.GetAudioS(), wantS)
	}
	speakers := map[string]bool{}
	for _, s := range final.GetSegments() {
		// pyannote's reconstruction runs over the zero-padded last 10 s
		// window, so a segment may end after the audio, never beyond that
		// window.
		if s.GetStartS() < 0 || s.GetStartS() >= wantS || s.GetEndS() < s.GetStartS() || s.GetEndS() > wantS+10 {
			return fmt.Errorf("segment [%.3f, %.3f] outside the audio (%.3f s) and its padded last window", s.GetStartS(), s.GetEndS(), wantS)
		}
		speakers[s.GetSpeaker()] = true
	}
	if int(final.GetSpeakerCount()) != len(speakers) {
		return fmt.Errorf("speaker_count %d but %d labels in segments", final.GetSpeakerCount(), len(speakers))
	}
	if strings.Count(final.GetRttm(), "\n") != len(final.GetSegments()) {
		return fmt.Errorf("%d RTTM lines for %d segments", strings.Count(final.GetRttm(), "\n"), len(final.GetSegments()))
	}
	if *expectRttm != "" {
		want, err := os.ReadFile(*expectRttm)
		if err != nil {
			return err
		}
		if string(want) != final.GetRttm() {
			return fmt.Errorf("RTTM differs from %s:\n--- got\n%s--- want\n%s", *expectRttm, final.GetRttm(), want)
		}
	}
	fmt.Printf("final: %d segments, %d speakers, %.2f s audio, rtfx %.2f, device %s, %d partials\n",
		len(final.GetSegments()), len(speakers), final.GetAudioS(), final.GetRtfx(), final.GetDevice(), partials)
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		os.Exit(1)
	}
	fmt.Println("interop: all checks passed")
}
