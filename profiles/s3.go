package profiles

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/s3utils"
)

var _ Store = (*S3)(nil)

// S3 keeps profiles in an S3-compatible bucket (MinIO here) as two objects per profile:
// <prefix>/<team>/<name>/data, written with one PutObject (S3 replaces an object atomically, so a
// reader sees the old or the new version, never a mix), and <prefix>/<team>/<name>/lock, JSON
// {owner, expires, token}.
//
// The lock object is the whole protocol, so two processes sharing a bucket respect each other:
// it is created with If-None-Match: * (only one creator succeeds), and renewed, taken over when
// expired, or released only with If-Match on the ETag its holder last wrote (only one writer per
// ETag succeeds). Unlock writes an already-expired record instead of deleting the object, because S3
// has no conditional delete here and an unconditional one could remove a successor's lock.
type S3 struct {
	client *minio.Client
	bucket string
	prefix string
}

// NewS3 returns a store in bucket under prefix ("" for the bucket's root). The bucket must exist.
func NewS3(client *minio.Client, bucket, prefix string) *S3 {
	return &S3{client: client, bucket: bucket, prefix: strings.Trim(prefix, "/")}
}

// ParseS3URL splits "s3://bucket/prefix" (prefix optional) into bucket and prefix.
func ParseS3URL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("parsing profiles url: %w", err)
	}
	if u.Scheme != "s3" {
		return "", "", fmt.Errorf("profiles url %q: scheme must be s3", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("profiles url %q: only s3://bucket/prefix is accepted", raw)
	}
	if err := s3utils.CheckValidBucketNameStrict(u.Host); err != nil {
		return "", "", fmt.Errorf("profiles url %q: %w", raw, err)
	}
	return u.Host, strings.Trim(u.Path, "/"), nil
}

func (s *S3) teamKey(team string) string {
	if s.prefix == "" {
		return team + "/"
	}
	return s.prefix + "/" + team + "/"
}

func (s *S3) key(team, name, object string) string { return s.teamKey(team) + name + "/" + object }

// s3Error unwraps err to the S3 error response inside it (minio.ToErrorResponse does not unwrap).
func s3Error(err error) minio.ErrorResponse {
	var r minio.ErrorResponse
	errors.As(err, &r)
	return r
}

// isNotFound reports a missing object.
func isNotFound(err error) bool {
	r := s3Error(err)
	return r.Code == minio.NoSuchKey || r.StatusCode == http.StatusNotFound
}

// isConflict reports a failed precondition: someone else wrote the object first.
func isConflict(err error) bool {
	r := s3Error(err)
	return r.Code == minio.PreconditionFailed || r.StatusCode == http.StatusPreconditionFailed ||
		r.StatusCode == http.StatusConflict
}

// Load returns the profile's last saved blob.
func (s *S3) Load(ctx context.Context, team, name string) ([]byte, error) {
	if err := validate(team, name); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, s.key(team, name, "data"), minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("loading profile %s: %w", name, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if isNotFound(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("loading profile %s: %w", name, err)
	}
	return b, nil
}

// readLock returns the lock object's record and ETag, or a nil record if there is none.
func (s *S3) readLock(ctx context.Context, team, name string) (*lockRecord, string, error) {
	// minio-go reads an object's body with If-Match on the ETag it first saw, so a lock rewritten
	// mid-read fails with a precondition error; read again to see the newer version.
	for range 5 {
		rec, etag, err := s.readLockOnce(ctx, team, name)
		if !isConflict(err) {
			return rec, etag, err
		}
	}
	return nil, "", fmt.Errorf("reading lock: it kept changing while read")
}

func (s *S3) readLockOnce(ctx context.Context, team, name string) (*lockRecord, string, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, s.key(team, name, "lock"), minio.GetObjectOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("reading lock: %w", err)
	}
	defer obj.Close()
	st, err := obj.Stat()
	if isNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading lock: %w", err)
	}
	b, err := io.ReadAll(obj)
	if isNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading lock: %w", err)
	}
	var rec lockRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		// A lock object is written whole; an unreadable one is treated as expired rather than
		// blocking the profile forever.
		return &lockRecord{}, st.ETag, nil
	}
	return &rec, st.ETag, nil
}

// putLock writes rec as the lock object under a condition: create-only when etag is "", otherwise
// only if the current ETag is etag. It returns the new ETag, or ErrLocked if the condition failed.
func (s *S3) putLock(ctx context.Context, team, name string, rec lockRecord, etag string) (string, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	opts := minio.PutObjectOptions{ContentType: "application/json"}
	if etag == "" {
		opts.SetMatchETagExcept("*")
	} else {
		opts.SetMatchETag(etag)
	}
	info, err := s.client.PutObject(ctx, s.bucket, s.key(team, name, "lock"), bytes.NewReader(b), int64(len(b)), opts)
	if isConflict(err) {
		return "", ErrLocked
	}
	if err != nil {
		return "", fmt.Errorf("writing lock: %w", err)
	}
	return info.ETag, nil
}

// Save replaces the profile's blob if lock is still the live lock object. The check and the write are
// two requests: a holder whose lock expires between them could overwrite a successor's save, which is
// why holders renew well before expiry.
func (s *S3) Save(ctx context.Context, team, name string, lock *Lock, data []byte) error {
	if err := validate(team, name); err != nil {
		return err
	}
	if lock == nil || lock.Team != team || lock.Name != name || !lock.live(time.Now()) {
		return ErrLocked
	}
	st, err := s.client.StatObject(ctx, s.bucket, s.key(team, name, "lock"), minio.StatObjectOptions{})
	if isNotFound(err) {
		return ErrLocked
	}
	if err != nil {
		return fmt.Errorf("checking lock: %w", err)
	}
	if st.ETag != lock.token {
		return ErrLocked
	}
	_, err = s.client.PutObject(ctx, s.bucket, s.key(team, name, "data"), bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/gzip"})
	if err != nil {
		return fmt.Errorf("saving profile %s: %w", name, err)
	}
	return nil
}

// Lock takes the profile's writer lock: a conditional create, or a conditional takeover of an
// expired lock object.
func (s *S3) Lock(ctx context.Context, team, name, owner string, ttl time.Duration) (*Lock, error) {
	if err := validate(team, name); err != nil {
		return nil, err
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	// A lock object can vanish between a failed create and the read (Delete removes it), so retry
	// a few times; every round makes progress only if the store changed under us.
	for range 5 {
		rec := lockRecord{Owner: owner, Expires: time.Now().Add(ttl), Token: rand.Text()}
		etag, err := s.putLock(ctx, team, name, rec, "")
		if err == nil {
			return &Lock{Team: team, Name: name, Owner: owner, Expires: rec.Expires, token: etag}, nil
		}
		if !errors.Is(err, ErrLocked) {
			return nil, err
		}
		cur, curTag, err := s.readLock(ctx, team, name)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			continue
		}
		if time.Now().Before(cur.Expires) {
			return nil, ErrLocked
		}
		rec.Expires = time.Now().Add(ttl)
		etag, err = s.putLock(ctx, team, name, rec, curTag)
		if err != nil {
			return nil, err // ErrLocked: another taker won the race for the expired lock
		}
		return &Lock{Team: team, Name: name, Owner: owner, Expires: rec.Expires, token: etag}, nil
	}
	return nil, ErrLocked
}

// Renew extends l to ttl from now if the lock object still carries l's ETag.
func (s *S3) Renew(ctx context.Context, l *Lock, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if l == nil {
		return ErrLocked
	}
	rec := lockRecord{Owner: l.Owner, Expires: time.Now().Add(ttl), Token: rand.Text()}
	etag, err := s.putLock(ctx, l.Team, l.Name, rec, l.token)
	if err != nil {
		return err
	}
	l.Expires, l.token = rec.Expires, etag
	return nil
}

// Unlock releases l by writing an expired record over it, if the lock object still carries l's ETag.
func (s *S3) Unlock(ctx context.Context, l *Lock) error {
	if l == nil {
		return ErrLocked
	}
	rec := lockRecord{Owner: "", Expires: time.Unix(0, 0).UTC(), Token: rand.Text()}
	etag, err := s.putLock(ctx, l.Team, l.Name, rec, l.token)
	if err != nil {
		return err
	}
	l.Expires, l.token = time.Time{}, etag
	return nil
}

// List returns the team's saved profiles; a profile's Locked reads its lock object.
func (s *S3) List(ctx context.Context, team string) ([]Info, error) {
	if err := validTeam(team); err != nil {
		return nil, err
	}
	prefix := s.teamKey(team)
	byName := map[string]*Info{}
	locks := map[string]bool{}
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("listing profiles: %w", obj.Err)
		}
		name, object := path.Split(strings.TrimPrefix(obj.Key, prefix))
		name = strings.TrimSuffix(name, "/")
		if ValidName(name) != nil {
			continue
		}
		switch object {
		case "data":
			byName[name] = &Info{Name: name, Size: obj.Size, SavedAt: obj.LastModified}
		case "lock":
			locks[name] = true
		}
	}
	out := make([]Info, 0, len(byName))
	now := time.Now()
	for name, info := range byName {
		if locks[name] {
			rec, _, err := s.readLock(ctx, team, name)
			if err != nil {
				return nil, err
			}
			info.Locked = rec != nil && now.Before(rec.Expires)
		}
		out = append(out, *info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// deleteLockTTL bounds how long Delete holds the lock it takes while removing a profile.
const deleteLockTTL = time.Minute

// Delete removes the profile. It takes the profile's lock itself first, so a writer cannot take the
// lock between the check and the removal; the lock object is removed last, while still ours.
func (s *S3) Delete(ctx context.Context, team, name string) error {
	if err := validate(team, name); err != nil {
		return err
	}
	l, err := s.Lock(ctx, team, name, "trawler-delete", deleteLockTTL)
	if err != nil {
		return err
	}
	removeLock := func() error {
		return s.client.RemoveObject(ctx, s.bucket, s.key(team, name, "lock"), minio.RemoveObjectOptions{})
	}
	dataKey := s.key(team, name, "data")
	if _, err := s.client.StatObject(ctx, s.bucket, dataKey, minio.StatObjectOptions{}); err != nil {
		if isNotFound(err) {
			if err := removeLock(); err != nil {
				return fmt.Errorf("removing lock: %w", err)
			}
			return ErrNotFound
		}
		s.Unlock(ctx, l)
		return fmt.Errorf("deleting profile %s: %w", name, err)
	}
	if err := s.client.RemoveObject(ctx, s.bucket, dataKey, minio.RemoveObjectOptions{}); err != nil {
		s.Unlock(ctx, l)
		return fmt.Errorf("deleting profile %s: %w", name, err)
	}
	if err := removeLock(); err != nil {
		return fmt.Errorf("removing lock: %w", err)
	}
	return nil
}
