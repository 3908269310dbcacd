// SPDX-License-Identifier: Apache-2.0
//
// The c10d backend "ringway": a thin C++ layer over libringway's C API
// (include/ringway.h).  Each process group owns one rw_comm_t and one
// worker thread; a collective is queued and returns a Work at once, the
// worker runs the queue in order (blocking C calls, bounded by the comm's
// timeout) and completes each Work and its Future.  An idle worker sleeps
// on a condition variable.
#include <torch/extension.h>

#include <ATen/core/ivalue.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "ringway.h"

namespace ringway_torch
{

using c10d::OpType;
using std::chrono::milliseconds;

/* The coalesced gathers' OpType names are newer than some torch releases
 * (setup.py finds which this one has); older ones report the base op. */
#ifdef RW_TORCH_OP_ALLGATHER_INTO_TENSOR_COALESCED
#define RW_OP_ALLGATHER_INTO_TENSOR_COALESCED OpType::ALLGATHER_INTO_TENSOR_COALESCED
#else
#define RW_OP_ALLGATHER_INTO_TENSOR_COALESCED OpType::_ALLGATHER_BASE
#endif
#ifdef RW_TORCH_OP_REDUCE_SCATTER_TENSOR_COALESCED
#define RW_OP_REDUCE_SCATTER_TENSOR_COALESCED OpType::REDUCE_SCATTER_TENSOR_COALESCED
#else
#define RW_OP_REDUCE_SCATTER_TENSOR_COALESCED OpType::_REDUCE_SCATTER_BASE
#endif

namespace
{

// The element type ringway reduces a tensor's scalars as; nullopt when it
// has none (the caller converts, or refuses).
std::optional<rw_dtype_t> rw_type(at::ScalarType t)
{
	switch (t) {
	case at::kFloat:
		return RW_FLOAT32;
	case at::kDouble:
		return RW_FLOAT64;
	case at::kHalf:
		return RW_FLOAT16;
	case at::kBFloat16:
		return RW_BFLOAT16;
	case at::kChar:
		return RW_INT8;
	case at::kByte:
		return RW_UINT8;
	case at::kInt:
		return RW_INT32;
	case at::kLong:
		return RW_INT64;
	case at::kUInt32:
		return RW_UINT32;
	case at::kUInt64:
		return RW_UINT64;
	case at::kFloat8_e4m3fn:
		return RW_FLOAT8E4M3;
	case at::kFloat8_e5m2:
		return RW_FLOAT8E5M2;
	default:
		return std::nullopt;
	}
}

const char *op_name(c10d::ReduceOp::RedOpType op)
{
	switch (op) {
	case c10d::ReduceOp::SUM:
		return "SUM";
	case c10d::ReduceOp::AVG:
		return "AVG";
	case c10d::ReduceOp::PRODUCT:
		return "PRODUCT";
	case c10d::ReduceOp::MIN:
		return "MIN";
	case c10d::ReduceOp::MAX:
		return "MAX";
	case c10d::ReduceOp::BAND:
		return "BAND";
	case c10d::ReduceOp::BOR:
		return "BOR";
	case c10d::ReduceOp::BXOR:
		return "BXOR";
	case c10d::ReduceOp::PREMUL_SUM:
		return "PREMUL_SUM";
	default:
		return "?";
	}
}

rw_op_t rw_reduce_op(const c10d::ReduceOp &op, const char *call)
{
	switch (op.op_) {
	case c10d::ReduceOp::SUM:
		return RW_SUM;
	case c10d::ReduceOp::AVG:
		return RW_AVG;
	case c10d::ReduceOp::PRODUCT:
		return RW_PROD;
	case c10d::ReduceOp::MIN:
		return RW_MIN;
	case c10d::ReduceOp::MAX:
		return RW_MAX;
	default:
		TORCH_CHECK_NOT_IMPLEMENTED(false, "ringway: ", call, " with ReduceOp.",
					    op_name(op.op_),
					    " is not supported (SUM, AVG, PRODUCT, MIN, MAX are)");
	}
}

// A tensor as ringway sees it: contiguous, a ringway element type.  `buf`
// is what the C call reads and writes; `back` says that the result must be
// copied back into the caller's tensor afterwards.
struct Operand {
	at::Tensor user, buf;
	rw_dtype_t dtype;
	bool back = false;
};

// The reduction of t's scalars for op: complex as pairs of reals (sum and
// avg only), int16 and bool through a wider type, non-contiguous through a
// contiguous copy.
Operand operand(const at::Tensor &t, const char *call, std::optional<rw_op_t> op)
{
	Operand o;
	at::Tensor x = t;

	o.user = t;
	TORCH_CHECK(t.layout() == at::kStrided, "ringway: ", call, ": only dense tensors (got ",
		    t.layout(), ")");
	TORCH_CHECK(t.device().is_cpu() || t.device().is_cuda(), "ringway: ", call,
		    ": tensors on cpu or cuda only (got ", t.device(), ")");
	if (at::isComplexType(t.scalar_type())) {
		TORCH_CHECK_NOT_IMPLEMENTED(!op || *op == RW_SUM || *op == RW_AVG,
					    "ringway: ", call,
					    ": complex tensors reduce with SUM or AVG only");
		x = at::view_as_real(t.is_contiguous() ? t : t.contiguous());
		o.back = !t.is_contiguous();
	}
	auto dt = rw_type(x.scalar_type());
	if (!dt && (x.scalar_type() == at::kShort || x.scalar_type() == at::kUInt16)) {
		x = x.to(at::kInt); // int16 wraps the same modulo 2^16
		o.back = true;
		dt = RW_INT32;
	} else if (!dt && x.scalar_type() == at::kBool) {
		TORCH_CHECK_NOT_IMPLEMENTED(!op || *op == RW_MIN || *op == RW_MAX,
					    "ringway: ", call,
					    ": bool tensors reduce with MIN or MAX only");
		x = x.to(at::kByte);
		o.back = true;
		dt = RW_UINT8;
	}
	TORCH_CHECK_NOT_IMPLEMENTED(dt.has_value(), "ringway: ", call, ": dtype ", t.scalar_type(),
				    " is not supported");
	if (!x.is_contiguous()) {
		x = x.contiguous();
		o.back = true;
	}
	o.buf = x;
	o.dtype = *dt;
	return o;
}

// Write o's result back into the caller's tensor when it went through a copy.
void settle(Operand &o)
{
	if (!o.back)
		return;
	if (at::isComplexType(o.user.scalar_type()))
		o.user.copy_(at::view_as_complex(o.buf));
	else
		o.user.copy_(o.buf);
}

size_t count_of(const Operand &o)
{
	return static_cast<size_t>(o.buf.numel());
}

} // namespace

// The type of a Work's future value (a list of tensors), made once: not
// one allocation more per collective.
const c10::TypePtr &tensor_list_type()
{
	static const c10::TypePtr type = c10::ListType::create(c10::TensorType::get());
	return type;
}

class RingwayBackend;

// One collective: completed by the worker, waited on by the caller.
class RingwayWork : public c10d::Work
{
      public:
	RingwayWork(int rank, OpType type, const char *title, std::vector<at::Tensor> outputs,
		    milliseconds timeout)
	    : c10d::Work(rank, type, title), outputs_(std::move(outputs)),
	      future_(c10::make_intrusive<at::ivalue::Future>(tensor_list_type())),
	      timeout_(timeout), title_(title)
	{
	}

	bool isCompleted() override
	{
		std::lock_guard<std::mutex> lock(mutex_);
		return completed_;
	}

	bool isSuccess() const override
	{
		std::lock_guard<std::mutex> lock(mutex_);
		return completed_ && !exception_;
	}

	std::exception_ptr exception() const override
	{
		std::lock_guard<std::mutex> lock(mutex_);
		return exception_;
	}

	std::vector<at::Tensor> result() override
	{
		return outputs_;
	}

	// Waits at most `timeout`, the process group's timeout when none is given.
	bool wait(milliseconds timeout = kNoTimeout) override
	{
		milliseconds limit = timeout == kNoTimeout ? timeout_ : timeout;
		std::unique_lock<std::mutex> lock(mutex_);

		if (!cv_.wait_for(lock, limit, [&] { return completed_; }))
			C10_THROW_ERROR(DistBackendError,
					c10::str("ringway: ", title_, " did not complete within ",
						 limit.count(),
						 " ms (the process group's timeout)"));
		if (exception_)
			std::rethrow_exception(exception_);
		return true;
	}

	void synchronize() override
	{
	}

	c10::intrusive_ptr<c10::ivalue::Future> getFuture() override
	{
		return future_;
	}

#ifdef RW_TORCH_WORK_TIMEOUT /* setup.py: this torch's Work has it */
	milliseconds getTimeout() const override
	{
		return timeout_;
	}
#endif

	// The worker's end of it: exactly once.
	void complete(std::exception_ptr e)
	{
		finish(e);
		if (e)
			future_->setError(e);
		else
			future_->markCompleted(c10::IValue(outputs_));
	}

      private:
	std::vector<at::Tensor> outputs_;
	c10::intrusive_ptr<at::ivalue::Future> future_;
	milliseconds timeout_;
	std::string title_;
};

class RingwayBackend : public c10d::Backend
{
      public:
	RingwayBackend(int rank, int size, const std::string &id, int64_t timeout_ms,
		       std::optional<int64_t> rw_timeout_ms)
	    : c10d::Backend(rank, size), timeout_(timeout_ms)
	{
		rw_config_t cfg = RW_CONFIG_INIT;
		rw_unique_id_t uid;

		TORCH_CHECK(id.size() == sizeof(uid.internal), "ringway: a unique id has ",
			    sizeof(uid.internal), " bytes, got ", id.size());
		memcpy(uid.internal, id.data(), sizeof(uid.internal));
		if (rw_timeout_ms)
			cfg.timeout_ms = *rw_timeout_ms;
		int rc;
		{
			pybind11::gil_scoped_release nogil;
			rc = rw_comm_init_id(&comm_, size, rank, &uid, &cfg);
		}
		if (rc)
			C10_THROW_ERROR(DistBackendError,
					c10::str("ringway: rank ", rank, " of ", size,
						 ": rw_comm_init_id failed: ", rw_strerror(rc)));
		worker_ = std::thread([this] { run(); });
	}

	~RingwayBackend() override
	{
		shutdown();
	}

	const std::string getBackendName() const override
	{
		return "ringway";
	}

	// Run what was queued, then leave the communicator (a failed one at
	// once; a healthy one waits, bounded, for the other ranks to leave).
	void shutdown() override
	{
		{
			std::lock_guard<std::mutex> lock(qmu_);
			if (stop_)
				return;
			stop_ = true;
		}
		qcv_.notify_all();
		// the queue's futures may run Python callbacks: never wait holding the GIL
		if (Py_IsInitialized() && PyGILState_Check()) {
			pybind11::gil_scoped_release nogil;
			teardown();
		} else {
			teardown();
		}
	}

	void abort() override
	{
		shutdown();
	}

	// --- collectives ------------------------------------------------------------

	c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
						 const c10d::AllreduceOptions &opts) override
	{
		const char *call = "allreduce";
		at::Tensor t = single(tensors, call);
		rw_op_t op = rw_reduce_op(opts.reduceOp, call);
		auto o = std::make_shared<Operand>(operand(t, call, op));

		return enqueue(
			OpType::ALLREDUCE, "ringway:all_reduce", {t}, {t}, [this, o, op, call] {
				check(rw_allreduce(comm_, o->buf.data_ptr(), o->buf.data_ptr(),
						   count_of(*o), o->dtype, op),
				      call);
				settle(*o);
			});
	}

	c10::intrusive_ptr<c10d::Work>
	allreduce_coalesced(std::vector<at::Tensor> &tensors,
			    const c10d::AllreduceCoalescedOptions &opts) override
	{
		const char *call = "allreduce_coalesced";
		rw_op_t op = rw_reduce_op(opts.reduceOp, call);
		auto os = std::make_shared<std::vector<Operand>>();

		for (auto &t : tensors)
			os->push_back(operand(t, call, op));
		return enqueue(OpType::ALLREDUCE_COALESCED, "ringway:all_reduce_coalesced", tensors,
			       tensors, [this, os, op, call] {
				       for (auto &o : *os) {
					       check(rw_allreduce(comm_, o.buf.data_ptr(),
								  o.buf.data_ptr(), count_of(o),
								  o.dtype, op),
						     call);
					       settle(o);
				       }
			       });
	}

	c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
						 const c10d::BroadcastOptions &opts) override
	{
		const char *call = "broadcast";
		at::Tensor t = single(tensors, call);
		int root = root_of(opts.rootRank, call);
		auto o = std::make_shared<Operand>(operand(t, call, std::nullopt));

		return enqueue(
			OpType::BROADCAST, "ringway:broadcast", {t}, {t}, [this, o, root, call] {
				check(rw_broadcast(comm_, o->buf.data_ptr(), o->buf.data_ptr(),
						   count_of(*o), o->dtype, root),
				      call);
				settle(*o);
			});
	}

	// Lists: gathered into one flat buffer, then copied out.
	c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
						 std::vector<at::Tensor> &inputs,
						 const c10d::AllgatherOptions &) override
	{
		const char *call = "allgather";
		at::Tensor in = single(inputs, call);

		TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_),
			    "ringway: ", call, ": one output list of ", size_, " tensors");
		for (auto &t : outputs[0])
			TORCH_CHECK(t.numel() == in.numel() &&
					    t.scalar_type() == in.scalar_type() &&
					    t.device() == in.device(),
				    "ringway: ", call,
				    ": every output tensor must have the input's numel, dtype and "
				    "device");
		auto o = std::make_shared<Operand>(operand(in, call, std::nullopt));
		auto outs = outputs[0];
		at::Tensor flat =
			at::empty({static_cast<int64_t>(size_) * o->buf.numel()}, o->buf.options());
		return enqueue(OpType::ALLGATHER, "ringway:all_gather", inputs, outs,
			       [this, o, flat, outs, call]() mutable {
				       check(rw_allgather(comm_, o->buf.data_ptr(), flat.data_ptr(),
							  count_of(*o), o->dtype),
					     call);
				       auto parts = flat.chunk(size_);
				       for (size_t r = 0; r < outs.size(); r++)
					       copy_out(outs[r], parts[r]);
			       });
	}

	c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
						       const c10d::AllgatherOptions &) override
	{
		return gather_base(output, input, "_allgather_base", OpType::_ALLGATHER_BASE);
	}

#ifdef RW_TORCH_ALL_GATHER_SINGLE
	c10::intrusive_ptr<c10d::Work> all_gather_single(at::Tensor &output, at::Tensor &input,
							 const c10d::AllgatherOptions &) override
	{
		return gather_base(output, input, "all_gather_single", OpType::_ALLGATHER_BASE);
	}
#endif

	c10::intrusive_ptr<c10d::Work>
	allgather_into_tensor_coalesced(std::vector<at::Tensor> &outputs,
					std::vector<at::Tensor> &inputs,
					const c10d::AllgatherOptions &) override
	{
		const char *call = "allgather_into_tensor_coalesced";
		TORCH_CHECK(outputs.size() == inputs.size(), "ringway: ", call,
			    ": as many outputs as inputs");
		auto pairs = std::make_shared<std::vector<std::pair<Operand, Operand>>>();
		for (size_t i = 0; i < inputs.size(); i++)
			pairs->emplace_back(gather_operands(outputs[i], inputs[i], call));
		return enqueue(RW_OP_ALLGATHER_INTO_TENSOR_COALESCED,
			       "ringway:all_gather_into_tensor_coalesced", inputs, outputs,
			       [this, pairs, call] {
				       for (auto &p : *pairs) {
					       check(rw_allgather(comm_, p.second.buf.data_ptr(),
								  p.first.buf.data_ptr(),
								  count_of(p.second),
								  p.second.dtype),
						     call);
					       settle(p.first);
				       }
			       });
	}

	c10::intrusive_ptr<c10d::Work>
	reduce_scatter(std::vector<at::Tensor> &outputs,
		       std::vector<std::vector<at::Tensor>> &inputs,
		       const c10d::ReduceScatterOptions &opts) override
	{
		const char *call = "reduce_scatter";
		at::Tensor out = single(outputs, call);
		rw_op_t op = rw_reduce_op(opts.reduceOp, call);

		TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_),
			    "ringway: ", call, ": one input list of ", size_, " tensors");
		std::vector<at::Tensor> flat_parts;
		for (auto &t : inputs[0]) {
			TORCH_CHECK(t.numel() == out.numel() &&
					    t.scalar_type() == out.scalar_type(),
				    "ringway: ", call,
				    ": every input tensor must have the output's numel and dtype");
			flat_parts.push_back(t.reshape({-1}));
		}
		at::Tensor flat = at::cat(flat_parts);
		auto o = std::make_shared<Operand>(operand(out, call, op));
		auto i = std::make_shared<Operand>(operand(flat, call, op));
		return enqueue(OpType::REDUCE_SCATTER, "ringway:reduce_scatter", inputs[0], {out},
			       [this, o, i, op, call] {
				       check(rw_reduce_scatter(comm_, i->buf.data_ptr(),
							       o->buf.data_ptr(), count_of(*o),
							       o->dtype, op),
					     call);
				       settle(*o);
			       });
	}

	c10::intrusive_ptr<c10d::Work>
	_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
			     const c10d::ReduceScatterOptions &opts) override
	{
		return scatter_base(output, input, opts, "_reduce_scatter_base");
	}

#ifdef RW_TORCH_REDUCE_SCATTER_SINGLE
	c10::intrusive_ptr<c10d::Work>
	reduce_scatter_single(at::Tensor &output, at::Tensor &input,
			      const c10d::ReduceScatterOptions &opts) override
	{
		return scatter_base(output, input, opts, "reduce_scatter_single");
	}
#endif

	c10::intrusive_ptr<c10d::Work>
	reduce_scatter_tensor_coalesced(std::vector<at::Tensor> &outputs,
					std::vector<at::Tensor> &inputs,
					const c10d::ReduceScatterOptions &opts) override
	{
		const char *call = "reduce_scatter_tensor_coalesced";
		rw_op_t op = rw_reduce_op(opts.reduceOp, call);
		TORCH_CHECK(outputs.size() == inputs.size(), "ringway: ", call,
			    ": as many outputs as inputs");
		auto pairs = std::make_shared<std::vector<std::pair<Operand, Operand>>>();
		for (size_t k = 0; k < inputs.size(); k++)
			pairs->emplace_back(scatter_operands(outputs[k], inputs[k], op, call));
		return enqueue(RW_OP_REDUCE_SCATTER_TENSOR_COALESCED,
			       "ringway:reduce_scatter_tensor_coalesced", inputs, outputs,
			       [this, pairs, op, call] {
				       for (auto &p : *pairs) {
					       check(rw_reduce_scatter(
							     comm_, p.second.buf.data_ptr(),
							     p.first.buf.data_ptr(),
							     count_of(p.first), p.first.dtype, op),
						     call);
					       settle(p.first);
				       }
			       });
	}

	c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &) override
	{
		auto token = std::make_shared<at::Tensor>(at::zeros({1}, at::kByte));

		// queued behind every earlier collective: done once they are
		return enqueue(OpType::BARRIER, "ringway:barrier", {}, {}, [this, token] {
			check(rw_allreduce(comm_, token->data_ptr(), token->data_ptr(), 1, RW_UINT8,
					   RW_MAX),
			      "barrier");
		});
	}

	// --- what ringway does not do: NotImplementedError, naming the call --------

#define RW_UNSUPPORTED(name, ...)                                                                  \
	c10::intrusive_ptr<c10d::Work> name(__VA_ARGS__) override                                  \
	{                                                                                          \
		TORCH_CHECK_NOT_IMPLEMENTED(false, "ringway: " #name                               \
						   " is not supported by the ringway backend "     \
						   "(use gloo for it, e.g. "                       \
						   "init_process_group(\"cpu:gloo\"))");           \
	}
	RW_UNSUPPORTED(allreduce_sparse, std::vector<at::Tensor> &, const c10d::AllreduceOptions &)
	RW_UNSUPPORTED(reduce, std::vector<at::Tensor> &, const c10d::ReduceOptions &)
	RW_UNSUPPORTED(allgather_coalesced, std::vector<std::vector<at::Tensor>> &,
		       std::vector<at::Tensor> &, const c10d::AllgatherOptions &)
	RW_UNSUPPORTED(gather, std::vector<std::vector<at::Tensor>> &, std::vector<at::Tensor> &,
		       const c10d::GatherOptions &)
	RW_UNSUPPORTED(scatter, std::vector<at::Tensor> &, std::vector<std::vector<at::Tensor>> &,
		       const c10d::ScatterOptions &)
	RW_UNSUPPORTED(alltoall_base, at::Tensor &, at::Tensor &, std::vector<int64_t> &,
		       std::vector<int64_t> &, const c10d::AllToAllOptions &)
	RW_UNSUPPORTED(alltoall, std::vector<at::Tensor> &, std::vector<at::Tensor> &,
		       const c10d::AllToAllOptions &)
	RW_UNSUPPORTED(send, std::vector<at::Tensor> &, int, int)
	RW_UNSUPPORTED(recv, std::vector<at::Tensor> &, int, int)
	RW_UNSUPPORTED(recvAnysource, std::vector<at::Tensor> &, int)
#undef RW_UNSUPPORTED

      private:
	void teardown()
	{
		if (worker_.joinable()) {
			if (worker_.get_id() == std::this_thread::get_id())
				worker_.detach();
			else
				worker_.join();
		}
		rw_comm_destroy(comm_);
		comm_ = nullptr;
	}

	at::Tensor single(std::vector<at::Tensor> &ts, const char *call)
	{
		TORCH_CHECK(ts.size() == 1, "ringway: ", call,
			    ": one tensor per call (got a list of ", ts.size(), ")");
		return ts[0];
	}

	int root_of(int64_t root, const char *call)
	{
		TORCH_CHECK(root >= 0 && root < size_, "ringway: ", call, ": root rank ", root,
			    " is not in the group of ", size_);
		return static_cast<int>(root);
	}

	static void copy_out(at::Tensor &dst, const at::Tensor &src)
	{
		dst.copy_(src.view(dst.sizes()));
	}

	std::pair<Operand, Operand> gather_operands(at::Tensor &output, at::Tensor &input,
						    const char *call)
	{
		TORCH_CHECK(output.numel() == static_cast<int64_t>(size_) * input.numel() &&
				    output.scalar_type() == input.scalar_type(),
			    "ringway: ", call, ": the output must have ", size_,
			    " x the input's elements, of its dtype");
		return {operand(output, call, std::nullopt), operand(input, call, std::nullopt)};
	}

	std::pair<Operand, Operand> scatter_operands(at::Tensor &output, at::Tensor &input,
						     rw_op_t op, const char *call)
	{
		TORCH_CHECK(input.numel() == static_cast<int64_t>(size_) * output.numel() &&
				    output.scalar_type() == input.scalar_type(),
			    "ringway: ", call, ": the input must have ", size_,
			    " x the output's elements, of its dtype");
		return {operand(output, call, op), operand(input, call, op)};
	}

	c10::intrusive_ptr<c10d::Work> gather_base(at::Tensor &output, at::Tensor &input,
						   const char *call, OpType type)
	{
		auto p = std::make_shared<std::pair<Operand, Operand>>(
			gather_operands(output, input, call));
		return enqueue(type, "ringway:all_gather_into_tensor", {input}, {output},
			       [this, p, call] {
				       check(rw_allgather(comm_, p->second.buf.data_ptr(),
							  p->first.buf.data_ptr(),
							  count_of(p->second), p->second.dtype),
					     call);
				       settle(p->first);
			       });
	}

	c10::intrusive_ptr<c10d::Work> scatter_base(at::Tensor &output, at::Tensor &input,
						    const c10d::ReduceScatterOptions &opts,
						    const char *call)
	{
		rw_op_t op = rw_reduce_op(opts.reduceOp, call);
		auto p = std::make_shared<std::pair<Operand, Operand>>(
			scatter_operands(output, input, op, call));
		return enqueue(OpType::_REDUCE_SCATTER_BASE, "ringway:reduce_scatter_tensor",
			       {input}, {output}, [this, p, op, call] {
				       check(rw_reduce_scatter(comm_, p->second.buf.data_ptr(),
							       p->first.buf.data_ptr(),
							       count_of(p->first), p->first.dtype,
							       op),
					     call);
				       settle(p->first);
			       });
	}

	// A failed C call: an exception naming the rank that failed.
	void check(int rc, const char *call)
	{
		if (rc == 0)
			return;
		char why[512] = "";
		int who = -1;
		int err = rw_comm_get_error(comm_, &who, why, sizeof(why));

		(void)who; // why names it
		if (err)
			C10_THROW_ERROR(DistBackendError,
					c10::str("ringway: ", call, " failed on rank ", rank_, ": ",
						 why, " (", rw_strerror(rc),
						 "); the process group is broken: destroy it and "
						 "create a new one"));
		C10_THROW_ERROR(DistBackendError, c10::str("ringway: ", call, " failed on rank ",
							   rank_, ": ", rw_strerror(rc)));
	}

	struct Job {
		std::function<void()> fn;
		c10::intrusive_ptr<RingwayWork> work;
		std::vector<at::Tensor> inputs;
		std::optional<c10::Event> ready; // cuda: the caller's stream got here
		c10::Device device = c10::Device(c10::kCPU);
	};

	c10::intrusive_ptr<c10d::Work> enqueue(OpType type, const char *title,
					       std::vector<at::Tensor> inputs,
					       std::vector<at::Tensor> outputs,
					       std::function<void()> fn)
	{
		auto work = c10::make_intrusive<RingwayWork>(rank_, type, title, outputs, timeout_);
		Job job{std::move(fn), work, std::move(inputs), std::nullopt};

		if (!job.inputs.empty() && job.inputs[0].device().is_cuda()) {
			// the worker starts once the caller's stream has produced the data
			job.device = job.inputs[0].device();
			auto impl = c10::impl::getDeviceGuardImpl(c10::kCUDA);
			job.ready.emplace(c10::kCUDA);
			job.ready->record(impl->getStream(job.device));
		}
		{
			std::lock_guard<std::mutex> lock(qmu_);
			TORCH_CHECK(!stop_, "ringway: ", title,
				    " on a process group that was shut down");
			queue_.push_back(std::move(job));
		}
		qcv_.notify_one();
		return work;
	}

	void run()
	{
		for (;;) {
			Job job;
			{
				std::unique_lock<std::mutex> lock(qmu_);
				qcv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
				if (queue_.empty())
					return; // stop_, and everything queued ran
				job = std::move(queue_.front());
				queue_.pop_front();
			}
			std::exception_ptr e;
			try {
				std::optional<c10::DeviceGuard> guard;
				if (job.ready) {
					guard.emplace(job.device);
					job.ready->synchronize();
				}
				job.fn();
			} catch (...) {
				e = std::current_exception();
			}
			job.work->complete(e);
		}
	}

	rw_comm_t *comm_ = nullptr;
	milliseconds timeout_;
	std::mutex qmu_;
	std::condition_variable qcv_;
	std::deque<Job> queue_;
	bool stop_ = false;
	std::thread worker_;
};

// rank 0: a rendezvous for the group, as the bytes of an rw_unique_id_t
pybind11::bytes unique_id()
{
	rw_unique_id_t id;
	int rc = rw_get_unique_id(&id);

	if (rc)
		C10_THROW_ERROR(DistBackendError,
				c10::str("ringway: rw_get_unique_id failed: ", rw_strerror(rc)));
	return pybind11::bytes(id.internal, sizeof(id.internal));
}

c10::intrusive_ptr<c10d::Backend> create(int rank, int size, const std::string &id,
					 int64_t timeout_ms, std::optional<int64_t> rw_timeout_ms)
{
	return c10::make_intrusive<RingwayBackend>(rank, size, id, timeout_ms, rw_timeout_ms);
}

} // namespace ringway_torch

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
	m.doc() = "ringway's c10d backend (libringway's C API under it)";
	m.def("unique_id", &ringway_torch::unique_id,
	      "rank 0: open a rendezvous, return it as bytes");
	m.def("create", &ringway_torch::create, pybind11::arg("rank"), pybind11::arg("size"),
	      pybind11::arg("id"), pybind11::arg("timeout_ms"),
	      pybind11::arg("rw_timeout_ms") = pybind11::none());
	m.def("version", [] { return std::string(rw_version()); });
	m.def(
		"cuda_support", [] { return rw_cuda_support() != 0; },
		"libringway was built with CUDA: cuda tensors can go through it");
}
