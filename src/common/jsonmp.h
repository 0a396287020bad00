/*
 * jsonmp.h: conversion between JSON (jansson) and msgpack.
 *
 * REST bodies arrive as JSON and are checked by the same msgpack decoders
 * that check WebSocket messages; session objects travel between processes
 * as msgpack and leave the front as JSON.  bin values become base64 strings.
 */
#ifndef JSONMP_H
#define JSONMP_H

#include <jansson.h>
#include <msgpack.h>

/* Pack a JSON value; -1 on a value msgpack cannot hold. */
int	 jsonmp_pack(msgpack_packer *, const json_t *);
/* A new JSON value for a msgpack object, or NULL (non-string keys, ENOMEM). */
json_t	*jsonmp_to_json(const msgpack_object *);

#endif
