package recording

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"
)

// S3 keeps chunks in an S3 bucket, under a prefix.
type S3 struct {
	client         *minio.Client
	bucket, prefix string
}

// NewS3 returns the object store of bucket, keys under the folder prefix
// ("" for the bucket's root).
func NewS3(client *minio.Client, bucket, prefix string) *S3 {
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		prefix += "/"
	}
	return &S3{client: client, bucket: bucket, prefix: prefix}
}

// Put writes one chunk.
func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	_, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/json", ContentEncoding: "gzip"})
	if err != nil {
		return fmt.Errorf("storing a recording chunk: %w", err)
	}
	return nil
}

// Get reads one chunk.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading a recording chunk: %w", err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		return nil, fmt.Errorf("reading a recording chunk: %w", err)
	}
	return b, nil
}

// Delete removes chunks; one already gone is no error.
func (s *S3) Delete(ctx context.Context, keys []string) error {
	objects := make(chan minio.ObjectInfo, len(keys))
	for _, k := range keys {
		objects <- minio.ObjectInfo{Key: s.prefix + k}
	}
	close(objects)
	for e := range s.client.RemoveObjects(ctx, s.bucket, objects, minio.RemoveObjectsOptions{}) {
		if e.Err != nil && minio.ToErrorResponse(e.Err).Code != "NoSuchKey" {
			return fmt.Errorf("deleting a recording chunk: %w", e.Err)
		}
	}
	return nil
}
