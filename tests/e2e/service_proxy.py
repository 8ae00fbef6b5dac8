#!/usr/bin/env python3
"""The real node's stand-in for kube-proxy, for the one Service its pods use:
the API server's `kubernetes` Service. The kubelet gives every container
KUBERNETES_SERVICE_HOST/PORT (10.0.0.1:443, the first address of the
cluster's service range); cluster.sh puts that address on the node's
loopback device and runs this to forward its connections, bytes unchanged
(TLS end to end), to the kube-apiserver on 127.0.0.1.

Usage: service_proxy.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT
Prints "ready" once it listens.
"""
import asyncio
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def forward(client_reader, client_writer, target):
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection(*target)
    except OSError as error:
        print(f"service_proxy: connect {target[0]}:{target[1]}: {error}", file=sys.stderr, flush=True)
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))


async def main(listen_host, listen_port, target_host, target_port):
    target = (target_host, target_port)
    server = await asyncio.start_server(lambda r, w: forward(r, w, target), listen_host, listen_port)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])))
