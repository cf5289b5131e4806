# The Trawler service: a static binary (pure Go, SQLite included) on
# distroless. Build it from the repository root where a registry is reachable:
#   docker build -f deploy/trawler.Dockerfile -t trawler/trawler:latest .
# Offline, `make images` builds an equivalent image (scripts/images.sh).
#
# The image holds no browser: run it with TRAWLER_RUNTIME=docker, the
# engine's socket mounted (-v /var/run/docker.sock:/var/run/docker.sock, hence
# root): it reaches its browsers through the engine, over their attached
# streams. TRAWLER_ADDR listens on every interface, which config refuses
# without TRAWLER_API_KEYS.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/trawler ./cmd/trawler \
 && mkdir /out/data

FROM gcr.io/distroless/static-debian12
COPY --from=build /out/trawler /trawler
COPY --from=build /out/data /data
ENV TRAWLER_DATA_DIR=/data TRAWLER_ADDR=0.0.0.0:3002
EXPOSE 3002
VOLUME /data
WORKDIR /data
ENTRYPOINT ["/trawler"]
CMD ["serve"]
