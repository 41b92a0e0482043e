#!/bin/sh
# The entrypoint of the course's images (Dockerfile): it names the accounts this pod runs as, because nbgrader asks
# the system who an account is (Python's pwd), and runs the pod's command.
# - A student's pod runs as an account of its own (config.yaml's extraConfig gives it a number) that the image does not
#   list: it is named after the hub's user, so nbgrader hands in under the name the student logged in with.
# - Formgrader's pod names its accounts from COURSE_ACCOUNTS, the hub's list of the class's accounts (formgrader.yaml):
#   collect reads from it who wrote each hand-in.
# nss_wrapper (libnss-wrapper) serves the list to every process of the pod; it reads a changed list at once.
set -e
if [ -n "${COURSE_ACCOUNTS:-}" ]; then
  export NSS_WRAPPER_PASSWD="$COURSE_ACCOUNTS"
elif ! getent passwd "$(id -u)" >/dev/null; then
  accounts=$(mktemp)
  cat /etc/passwd >"$accounts"
  echo "${JUPYTERHUB_USER:?the hub names this server's user in JUPYTERHUB_USER}:x:$(id -u):$(id -g)::${HOME:-/home/jovyan}:/bin/bash" >>"$accounts"
  export NSS_WRAPPER_PASSWD="$accounts"
fi
if [ -n "${NSS_WRAPPER_PASSWD:-}" ]; then
  export NSS_WRAPPER_GROUP=/etc/group LD_PRELOAD=libnss_wrapper.so
fi
exec "$@"
