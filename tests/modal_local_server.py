"""A local stand-in for Modal's API server, speaking the pinned client's own protocol (the gRPC service
and messages of modal_proto in the installed wheel), so that the real client drives the runner's Modal
backend end to end in the CPU tier without Modal's servers.

It answers what `python -m harness.runner ...` asks, in the order the client asks it: the environment
(with an image builder version of the test's choosing), the app, the mounts and their files
(the packed working tree among them), the image layers and their builds, the function, its inputs and
its outputs, the heartbeats, the logs stream (empty) and the disconnect. Every request is recorded for the
tests to read. It runs no container: each job's outcome comes from the test's `answer(job)`, one of
    ("ok", result)        the job's result, as job.run_job returns it
    ("timeout", text)     Modal's timeout for the call (GenericResult TIMEOUT)
    ("error", exception)  an exception raised in the container (GenericResult FAILURE, pickled)
    ("hang", None)        no output until the client goes away (for Ctrl-C)
An RPC it does not answer fails with UNIMPLEMENTED and is recorded in `unanswered`.
"""

from __future__ import annotations

import asyncio
import itertools
import pickle
import threading
import time
from collections.abc import Callable
from pathlib import Path

import grpclib
import grpclib.const
import grpclib.server
from google.protobuf.empty_pb2 import Empty
from modal_proto import api_grpc, api_pb2

ServerStream = grpclib.server.Stream


class LocalModal:
    def __init__(self, answer: Callable[[dict], tuple[str, object]], socket: Path,
                 image_builder: str = "2024.04"):
        self.answer = answer
        self.socket = socket
        self.image_builder = image_builder
        self.requests: list[tuple[str, object]] = []
        self.unanswered: list[str] = []
        self.mount_files: dict[str, bytes] = {}  # sha256 -> bytes, as the client uploads them
        self.outputs: dict[str, api_pb2.FunctionGetOutputsItem] = {}  # function call id -> its output
        self.ids = itertools.count(1)
        self.disconnected = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: grpclib.server.Server | None = None

    # ----- what the tests read
    def named(self, name: str) -> list:
        return [message for n, message in self.requests if n == name]

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    # ----- lifecycle: the server's own event loop in a thread of the test process
    def __enter__(self) -> LocalModal:
        started = threading.Event()

        def serve():
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._server = grpclib.server.Server([self._servicer()])
            self._loop.run_until_complete(self._server.start(path=str(self.socket)))
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name="local-modal", daemon=True)
        self._thread.start()
        started.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        async def stop():
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _servicer(self):
        """An api_grpc.ModalClientBase whose every RPC goes to `rpc_<Name>` here, or fails UNIMPLEMENTED."""
        local = self

        def handler(name: str, cardinality):
            async def answer_rpc(servicer, stream: ServerStream) -> None:
                request = await stream.recv_message()
                local.requests.append((name, request))
                method = getattr(local, f"rpc_{name}", None)
                if method is None:
                    local.unanswered.append(name)
                    raise grpclib.GRPCError(grpclib.Status.UNIMPLEMENTED, f"{name} is not answered here")
                reply = method(request)
                if asyncio.iscoroutine(reply):
                    reply = await reply
                if cardinality == grpclib.const.Cardinality.UNARY_STREAM:
                    async for message in reply:
                        await stream.send_message(message)
                else:
                    await stream.send_message(reply)
            return answer_rpc

        # The generated base lists every RPC with its cardinality in __mapping__, which reads only the
        # handler attributes: a stand-in object gives the list without implementing the base first.
        base = api_grpc.ModalClientBase
        mapping = base.__mapping__(type("Names", (), dict.fromkeys(base.__abstractmethods__))())
        methods = {}
        for path, h in mapping.items():
            name = path.rsplit("/", 1)[1]
            methods[name] = handler(name, h.cardinality)
        return type("LocalModalServicer", (base,), methods)()

    def new_id(self, prefix: str) -> str:
        return f"{prefix}-local{next(self.ids)}"

    # ----- the client's session
    def rpc_EnvironmentGetOrCreate(self, request) -> api_pb2.EnvironmentGetOrCreateResponse:
        settings = api_pb2.EnvironmentSettings(image_builder_version=self.image_builder, webhook_suffix="")
        return api_pb2.EnvironmentGetOrCreateResponse(
            environment_id="en-local", metadata=api_pb2.EnvironmentMetadata(name="main", settings=settings))

    def rpc_AppCreate(self, request) -> api_pb2.AppCreateResponse:
        app_id = self.new_id("ap")
        return api_pb2.AppCreateResponse(app_id=app_id, app_page_url=f"https://modal.local/apps/{app_id}")

    def rpc_AppHeartbeat(self, request) -> Empty:
        return Empty()

    async def rpc_AppGetLogs(self, request):
        """No container logs here: the stream ends once the client has gone ("app done")."""
        for _ in range(int(min(request.timeout, 10) / 0.02)):
            if self.disconnected.is_set():
                break
            await asyncio.sleep(0.02)
        if self.disconnected.is_set():
            yield api_pb2.TaskLogsBatch(app_done=True)

    def rpc_AppPublish(self, request) -> api_pb2.AppPublishResponse:
        return api_pb2.AppPublishResponse(url="")

    def rpc_AppClientDisconnect(self, request) -> Empty:
        self.disconnected.set()
        return Empty()

    # ----- mounts: the working tree and the harness package, file by file
    def rpc_MountGetOrCreate(self, request) -> api_pb2.MountGetOrCreateResponse:
        return api_pb2.MountGetOrCreateResponse(mount_id=self.new_id("mo"))

    def rpc_MountBatchedCheckExistence(self, request) -> api_pb2.MountBatchedCheckExistenceResponse:
        missing = [h for h in request.sha256_hex_hashes if h not in self.mount_files]
        return api_pb2.MountBatchedCheckExistenceResponse(missing_sha256_hex_hashes=missing)

    def rpc_MountPutFile(self, request) -> api_pb2.MountPutFileResponse:
        if request.WhichOneof("data_oneof") == "data":
            self.mount_files[request.sha256_hex] = request.data
            return api_pb2.MountPutFileResponse(exists=True)
        return api_pb2.MountPutFileResponse(exists=request.sha256_hex in self.mount_files)

    # ----- the image, layer by layer
    def rpc_ImageGetOrCreate(self, request) -> api_pb2.ImageGetOrCreateResponse:
        return api_pb2.ImageGetOrCreateResponse(image_id=self.new_id("im"))

    async def rpc_ImageJoinStreaming(self, request):
        result = api_pb2.GenericResult(status=api_pb2.GenericResult.GENERIC_STATUS_SUCCESS)
        yield api_pb2.ImageJoinStreamingResponse(result=result, metadata=api_pb2.ImageMetadata(
            python_version_info="3.13.17"))

    # ----- the function and its calls
    def handle(self, function_id: str, name: str) -> api_pb2.FunctionHandleMetadata:
        pickle_format = [api_pb2.DATA_FORMAT_PICKLE]
        return api_pb2.FunctionHandleMetadata(function_name=name, max_object_size_bytes=2 << 20,
                                              supported_input_formats=pickle_format,
                                              supported_output_formats=pickle_format)

    def rpc_FunctionPrecreate(self, request) -> api_pb2.FunctionPrecreateResponse:
        function_id = self.new_id("fu")
        return api_pb2.FunctionPrecreateResponse(function_id=function_id,
                                                 handle_metadata=self.handle(function_id, request.function_name))

    def rpc_FunctionCreate(self, request) -> api_pb2.FunctionCreateResponse:
        """The definition comes back as the function's data, as Modal echoes it."""
        function_id = request.existing_function_id or self.new_id("fu")
        data = request.function_data if request.HasField("function_data") else api_pb2.FunctionData(
            ranked_functions=[api_pb2.FunctionData.RankedFunction(rank=0, function=request.function)])
        name = data.ranked_functions[0].function.function_name
        return api_pb2.FunctionCreateResponse(function_id=function_id, function_data=data,
                                              handle_metadata=self.handle(function_id, name))

    def rpc_FunctionMap(self, request) -> api_pb2.FunctionMapResponse:
        call_id = self.new_id("fc")
        items = []
        for index, item in enumerate(request.pipelined_inputs):
            input_id = self.new_id("in")
            items.append(api_pb2.FunctionPutInputsResponseItem(idx=index, input_id=input_id))
            self._start(call_id, input_id, index, item.input)
        return api_pb2.FunctionMapResponse(function_call_id=call_id, pipelined_inputs=items)

    def _start(self, call_id: str, input_id: str, index: int, function_input) -> None:
        (job,), _kwargs = pickle.loads(function_input.args)
        kind, value = self.answer(job)
        status = api_pb2.GenericResult
        if kind == "hang":
            return
        if kind == "ok":
            result = status(status=status.GENERIC_STATUS_SUCCESS, data=pickle.dumps(value))
        elif kind == "timeout":
            result = status(status=status.GENERIC_STATUS_TIMEOUT, exception=str(value))
        else:
            result = status(status=status.GENERIC_STATUS_FAILURE, exception=f"{type(value).__name__}: {value}",
                            data=pickle.dumps(value), traceback=f"Traceback (most recent call last):\n{value!r}")
        self.outputs[call_id] = api_pb2.FunctionGetOutputsItem(
            idx=index, input_id=input_id, result=result, data_format=api_pb2.DATA_FORMAT_PICKLE)

    async def rpc_FunctionGetOutputs(self, request) -> api_pb2.FunctionGetOutputsResponse:
        deadline = time.monotonic() + min(request.timeout, 1.0)
        while time.monotonic() < deadline and request.function_call_id not in self.outputs:
            await asyncio.sleep(0.02)
        item = self.outputs.get(request.function_call_id)
        return api_pb2.FunctionGetOutputsResponse(outputs=[item] if item else [],
                                                  num_unfinished_inputs=0 if item else 1, last_entry_id="0-0")
