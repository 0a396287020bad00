# Sourced by tests/sdk/run.sh in contrib/sdk/java ($kit: tests/sdk,
# LODGED exported): JDK 17 and Maven from Debian where the machine lacks
# them, then `mvn -B test` (the pinned dependencies and plugins from Maven
# Central into ~/.m2; javac -Xlint:all -Werror) against a private lodged.
# Non-zero on any failure.
set -eu
if ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		    --no-install-recommends openjdk-17-jdk-headless maven >/dev/null
	fi
fi
"$kit/with-lodged" --lodged "$LODGED" -- mvn -B -ntp test
