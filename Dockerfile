# kubecache's image: built from this source in the Rust image, shipped as
# a stripped binary on distroless (glibc and libgcc, no shell, no package
# manager), as a non-root user. deploy/ runs it with a read-only root
# filesystem; it writes nothing but its log to stderr.
#
#   buildah bud -t kubecache .            (or podman build, docker build)
#   buildah bud --target debug -t kubecache-debug .   # the debug info alone
#
# The release profile keeps line tables (Cargo.toml); they are split off
# into kubecache.debug (linked by .gnu_debuglink) so that the shipped
# binary is small and a crash can still be symbolized.

# The workspace's rust-version; bookworm's glibc is distroless/cc-debian12's.
FROM docker.io/library/rust:1.89-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p kubecache-cli \
 && objcopy --only-keep-debug target/release/kubecache /kubecache.debug \
 && objcopy --strip-all --add-gnu-debuglink=/kubecache.debug \
      target/release/kubecache /kubecache

FROM scratch AS debug
COPY --from=build /kubecache.debug /kubecache.debug

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /kubecache /usr/local/bin/kubecache
# distroless's nonroot user, by number: runAsNonRoot can check it.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/kubecache"]
CMD ["serve", "--config", "/etc/kubecache/kubecache.yaml"]
