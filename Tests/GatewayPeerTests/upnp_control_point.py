"""A real control point for Tests/GatewayPeerTests/UPnPBridgePeerTests.swift: async-upnp-client.

Usage: upnp_control_point.py SSDP_PORT FOLDER. Finds the Presence:1 device by an M-SEARCH sent
unicast to 127.0.0.1:SSDP_PORT (again each second until it answers, 10 s at most), reads its description with UpnpFactory, subscribes to its events
(AiohttpNotifyServer on 127.0.0.1) and writes FOLDER/ready.json. Then it carries out the test's
commands one by one: FOLDER/cmd-N.json ({"action": NAME, "args": {...}}, or {"quit": true}) is
answered in FOLDER/out-N.json ({"ok": {...}} or {"fault": CODE, "status": HTTP}); every event
received is appended to FOLDER/events.jsonl as one JSON object per line. It gives up after 120 s
without a command.
"""

import asyncio
import json
import os
import sys

from async_upnp_client.aiohttp import AiohttpNotifyServer, AiohttpRequester
from async_upnp_client.client_factory import UpnpFactory
from async_upnp_client.exceptions import UpnpActionResponseError, UpnpError
from async_upnp_client.search import async_search

DEVICE_TYPE = "urn:schemas-upnp-org:device:TelephonyServer:2"
SERVICE_TYPE = "urn:schemas-upnp-org:service:Presence:1"


def write(folder, name, value):
    path = os.path.join(folder, name)
    with open(path + ".tmp", "w") as f:
        json.dump(value, f)
    os.replace(path + ".tmp", path)


async def call(service, name, arguments):
    try:
        return {"ok": dict(await service.action(name).async_call(**arguments))}
    except UpnpActionResponseError as error:
        return {"fault": error.error_code, "status": error.status}
    except UpnpError as error:
        return {"error": repr(error)}


async def main(ssdp_port, folder):
    found = []

    async def on_response(headers):
        found.append({key: headers.get(key) for key in ("ST", "LOCATION")})

    # The device answers once it runs, which a loaded machine may start late: searched again, 10
    # times at most, until it answers.
    for _ in range(10):
        await async_search(on_response, timeout=1, search_target=SERVICE_TYPE, source=("127.0.0.1", 0),
                           target=("127.0.0.1", ssdp_port))
        if any(r["ST"] == SERVICE_TYPE for r in found):
            break
    location = next(r["LOCATION"] for r in found if r["ST"] == SERVICE_TYPE)
    requester = AiohttpRequester()
    device = await UpnpFactory(requester).async_create_device(location)
    service = device.service(SERVICE_TYPE)

    def on_event(_, variables):
        with open(os.path.join(folder, "events.jsonl"), "a") as f:
            f.write(json.dumps({v.name: v.value for v in variables}) + "\n")

    service.on_event = on_event
    server = AiohttpNotifyServer(requester, source=("127.0.0.1", 0))
    await server.async_start_server()
    sid, _ = await server.event_handler.async_subscribe(service)
    write(folder, "ready.json", {"search": found, "type": device.device_type, "sid": sid})
    number, idle = 1, 0.0
    while idle < 120:
        path = os.path.join(folder, "cmd-%d.json" % number)
        if not os.path.exists(path):
            await asyncio.sleep(0.05)
            idle += 0.05
            continue
        with open(path) as f:
            command = json.load(f)
        if command.get("quit"):
            break
        write(folder, "out-%d.json" % number, await call(service, command["action"], command.get("args", {})))
        number, idle = number + 1, 0.0
    await server.event_handler.async_unsubscribe_all()
    await server.async_stop_server()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
