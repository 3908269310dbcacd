/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The provider side of libibverbs that softverbs needs, written for
 * ringway from the layout facts of the private provider ABI "PABI 34"
 * (rdma-core v39..v56; Debian 12 ships v44).  rdma-core does not install
 * infiniband/driver.h, so this header declares only what an out-of-tree
 * provider touches, and pins every size and offset it relies on with a
 * static_assert (x86-64 and aarch64 LP64 values).  A libibverbs with another
 * private ABI does not load this provider at all (the registration symbol
 * carries the ABI number), so a mismatch fails loudly, never silently.
 *
 * Objects from libibverbs' public header are used as they are; the
 * provider allocates "verbs_" wrappers around them as the library expects
 * (struct verbs_mr around ibv_mr, verbs_qp around ibv_qp, the whole
 * verbs_context around ibv_context).
 */
#ifndef SV_ABI_H
#define SV_ABI_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/verbs.h>

#define SV_PABI_VERSION 34

/* A node of rdma-core's intrusive list (ccan/list.h). */
struct sv_list_node {
	struct sv_list_node *next, *prev;
};

/* One entry of a provider's match table; softverbs matches with a
 * callback instead and leaves the table NULL. */
struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

/* An RDMA device found in sysfs (filled by libibverbs). */
struct verbs_sysfs_dev {
	struct sv_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX]; /* "uverbs0" */
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX]; /* "sv_roce0" */
	char ibdev_path[IBV_SYSFS_PATH_MAX]; /* $SYSFS_PATH/class/infiniband/... */
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;
	struct timespec time_created;
};

struct verbs_device;
struct verbs_mr;

/* What a provider registers. */
struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device, int cmd_fd,
					       void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device, int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

struct verbs_device {
	struct ibv_device device; /* must be first */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct sv_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/* verbs_device.core_support: let optional access bits (relaxed ordering)
 * reach reg_mr instead of being stripped by ibv_reg_mr_iova2. */
#define SV_CORE_SUPPORT_OPTIONAL_MR_ACCESS (1ull << 0)

/* A placeholder for an operation softverbs leaves to libibverbs' dummy
 * (EOPNOTSUPP) implementation: it is never set, only keeps the layout. */
typedef void (*sv_unset_op)(void);

/*
 * The context operations, sorted as in rdma-core (alphabetically; 76
 * pointers).  Only the slots softverbs fills have their real types.
 */
struct verbs_context_ops {
	sv_unset_op advise_mr;
	sv_unset_op alloc_dm;
	sv_unset_op alloc_mw;
	sv_unset_op alloc_null_mr;
	sv_unset_op alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	sv_unset_op alloc_td;
	sv_unset_op async_event;
	sv_unset_op attach_counters_point_flow;
	sv_unset_op attach_mcast;
	sv_unset_op bind_mw;
	sv_unset_op close_xrcd;
	sv_unset_op cq_event;
	sv_unset_op create_ah;
	sv_unset_op create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel, int comp_vector);
	sv_unset_op create_cq_ex;
	sv_unset_op create_flow;
	sv_unset_op create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	sv_unset_op create_qp_ex;
	sv_unset_op create_rwq_ind_table;
	sv_unset_op create_srq;
	sv_unset_op create_srq_ex;
	sv_unset_op create_wq;
	sv_unset_op dealloc_mw;
	int (*dealloc_pd)(struct ibv_pd *pd);
	sv_unset_op dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	sv_unset_op destroy_ah;
	sv_unset_op destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	sv_unset_op destroy_flow;
	sv_unset_op destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	sv_unset_op destroy_rwq_ind_table;
	sv_unset_op destroy_srq;
	sv_unset_op destroy_wq;
	sv_unset_op detach_mcast;
	void (*free_context)(struct ibv_context *context);
	sv_unset_op free_dm;
	sv_unset_op get_srq_num;
	sv_unset_op import_dm;
	sv_unset_op import_mr;
	sv_unset_op import_pd;
	sv_unset_op modify_cq;
	sv_unset_op modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
	sv_unset_op modify_qp_rate_limit;
	sv_unset_op modify_srq;
	sv_unset_op modify_wq;
	sv_unset_op open_qp;
	sv_unset_op open_xrcd;
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	sv_unset_op post_srq_ops;
	sv_unset_op post_srq_recv;
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			struct ibv_qp_init_attr *init_attr);
	sv_unset_op query_qp_data_in_order;
	sv_unset_op query_rt_values;
	sv_unset_op query_srq;
	sv_unset_op read_counters;
	sv_unset_op reg_dm_mr;
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t length,
					uint64_t iova, int fd, int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
				 int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	sv_unset_op rereg_mr;
	sv_unset_op resize_cq;
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	sv_unset_op unimport_dm;
	sv_unset_op unimport_mr;
	sv_unset_op unimport_pd;
};

/* How libibverbs tells a plain MR from a dma-buf one. */
enum sv_mr_type {
	SV_MR_TYPE_MR = 0,
	SV_MR_TYPE_NULL_MR = 1,
	SV_MR_TYPE_IMPORTED_MR = 2,
	SV_MR_TYPE_DMABUF_MR = 3,
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	int mr_type; /* enum sv_mr_type (an enum in rdma-core: 4 bytes) */
	int access;
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	void *xrcd;
};

/* One async event as the kernel would write it to async_fd. */
struct sv_async_desc {
	uint64_t element;
	uint32_t event_type;
	uint32_t reserved;
};

/* --- what libibverbs exports to providers (version IBVERBS_PRIVATE_34) --- */

void verbs_register_driver_34(const struct verbs_device_ops *ops);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    struct verbs_context *context_offset, uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops);

/* --- the layout facts, checked ------------------------------------------ */

#if defined(__LP64__)
static_assert(sizeof(struct ibv_device) == 664, "ibv_device");
static_assert(sizeof(struct verbs_sysfs_dev) == 992, "verbs_sysfs_dev");
static_assert(offsetof(struct verbs_sysfs_dev, sysfs_name) == 36, "sysfs_name");
static_assert(offsetof(struct verbs_sysfs_dev, ibdev_name) == 112, "ibdev_name");
static_assert(offsetof(struct verbs_sysfs_dev, ibdev_path) == 176, "ibdev_path");
static_assert(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops");
static_assert(sizeof(struct verbs_device) == 712, "verbs_device");
static_assert(offsetof(struct verbs_device, ops) == 664, "verbs_device.ops");
static_assert(offsetof(struct verbs_device, refcount) == 672, "refcount");
static_assert(offsetof(struct verbs_device, entry) == 680, "entry");
static_assert(offsetof(struct verbs_device, sysfs) == 696, "sysfs");
static_assert(offsetof(struct verbs_device, core_support) == 704, "core_support");
static_assert(sizeof(struct verbs_context_ops) == 76 * sizeof(void *), "ops: 76 slots");
static_assert(sizeof(struct verbs_mr) == 56, "verbs_mr");
static_assert(sizeof(struct sv_async_desc) == 16, "ib_uverbs_async_event_desc");
#endif

#endif /* SV_ABI_H */
