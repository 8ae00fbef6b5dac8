/// @file
/// dra::kubeletplugin::Options: how a Helper is started.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/cdi/spec.h"
#include "dra/cdi/spec_dir.h"
#include "dra/k8s/claim_ref.h"
#include "dra/kubeletplugin/device_metadata.h"
#include "dra/log.h"
#include "dra/resourceslice/publishing_options.h"

namespace dra::k8s {
class Client;  // dra/k8s/client.h
}  // namespace dra::k8s

namespace dra::kubeletplugin {

class ClaimSource;  // dra/kubeletplugin/claim_source.h

/// Which kubelet-facing services the Helper serves and advertises.
struct Services {
  bool dra_v1 = true;           ///< k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin
  bool dra_v1beta1 = true;      ///< k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin
  bool health_v1 = true;        ///< v1.DRAResourceHealth (if the driver reports health)
  bool health_v1alpha1 = true;  ///< v1alpha1.DRAResourceHealth (if the driver reports health)
};

/// The per-claim CDI spec files the Helper writes for devices that carry
/// Device::cdi_edits. Each file is written (atomically) before the checkpoint
/// records the claim as prepared, and its content is kept in the checkpoint:
/// when a prepared claim is asked for again and its file is gone (a reboot
/// emptied the tmpfs), the file is written again before the answer. It is
/// removed after the driver unprepared the claim. At Start, this driver's
/// per-claim files whose claim is not in the checkpoint are removed (only
/// with the checkpoint on); files of other vendors or classes are never touched.
struct CdiOptions {
  /// When off, a device with cdi_edits fails its claim. Default: true.
  bool enabled = true;
  /// Where container runtimes read CDI specs (default /var/run/cdi), and the
  /// files' format (JSON) and mode (0600, as the CDI reference library).
  cdi::SpecDirOptions dir;
  /// CDI vendor of the spec kind "<vendor>/<class>". Default: driver_name.
  std::string vendor;
  /// CDI class of the spec kind. Default: "claim".
  std::string class_name = "claim";
  /// Format of the per-claim spec files, when it differs from dir.format
  /// (the node-wide specs'): a driver that names them as another driver
  /// does, in that driver's format, keeps its node-wide specs where an
  /// earlier version of it wrote them. Default: dir.format.
  std::optional<cdi::Format> claim_format;
  /// Node-wide specs that prepared devices name in Device::cdi_device_ids
  /// (a device "common" with the env every container of the driver gets,
  /// say), one file "<vendor>-<class>" each: written by Start, and written
  /// again before a prepare call is answered when one is gone (the tmpfs was
  /// emptied while the driver ran on, or someone removed it). Their kinds
  /// must differ from the per-claim kind.
  std::vector<cdi::Spec> node_specs;
};

/// Which physical units a device occupies: any strings the driver chooses,
/// the same for the same hardware. Two devices whose units intersect
/// overlap (a partition and its whole GPU, both drawn from one counter set).
/// Given the pool and name of an allocated device; an empty answer means the
/// device occupies only itself.
using DeviceUnits = std::function<std::vector<std::string>(std::string_view pool, std::string_view device)>;

/// Device exclusivity: the Helper refuses to prepare a claim whose allocated
/// device another claim on this node still holds, prepared or being
/// prepared, before the driver sees it. The scheduler never allocates one
/// device to two unrelated claims, but a force-deleted pod
/// (`--grace-period=0`) or a lost node lets it hand the device to a
/// replacement while the old container still runs; the driver is the last
/// line of defence (the contract of Kubernetes 1.38's kubeletplugin). The
/// refused claim fails alone, naming the device and the claim that holds
/// it; the kubelet retries it, and it is prepared once the kubelet unprepared
/// the holder. Two allocations may hold one device at once when both carry a
/// shareID (the device allows multiple allocations) or either has
/// adminAccess. Needs the checkpoint (Options::checkpoint), which records what
/// each claim holds and survives restarts; with it off nothing is checked.
struct DeviceExclusivityOptions {
  /// Default: true. Off, every claim goes to the driver as before.
  bool enabled = true;
  /// For devices that overlap without having the same name. Called under
  /// the Helper's serialization, once per allocated device of a claim being
  /// prepared: must be quick. Default: none (every device is only itself).
  DeviceUnits units;
};

/// Everything Helper::Start needs besides the Driver.
struct Options {
  /// Required. The DRA driver name: a lower-case DNS subdomain of at most 63
  /// characters, e.g. "gpu.example.com".
  std::string driver_name;

  /// The node this instance runs on. Default: empty (needed only by the API
  /// layer and ResourceSlice publishing).
  std::string node_name;

  /// Where the kubelet watches for registration sockets. Must exist.
  /// Default: /var/lib/kubelet/plugins_registry.
  std::string registrar_dir = "/var/lib/kubelet/plugins_registry";

  /// Directory for the DRA socket, the prepared-claims checkpoint and the
  /// serialization lock; created (mode 0750) if missing. Not shared with other
  /// drivers. Default: `/var/lib/kubelet/plugins/<driver_name>`.
  std::string plugin_data_dir;

  /// Registration socket file name inside registrar_dir.
  /// Default: `<driver_name>-reg.sock`, or `<driver_name>-<uid>-reg.sock` with a
  /// rolling-update UID. Must not be set together with rolling_update_uid.
  std::string registrar_socket_name;

  /// DRA service socket file name inside plugin_data_dir.
  /// Default: dra.sock, or `dra-<uid>.sock` with a rolling-update UID.
  std::string dra_socket_name;

  /// The pod UID, to let a new instance start beside an old one during a
  /// DaemonSet rolling update (kubelet 1.33+). Empty (default) disables it.
  std::string rolling_update_uid;

  /// Serialize NodePrepareResources and NodeUnprepareResources: the driver
  /// never sees two calls at once; with a rolling-update UID also across
  /// instances, through a file lock. Default: true.
  bool serialize = true;

  /// Default: all on.
  Services services;

  /// The API server client, as the Go helper's KubeClient: Helper::
  /// PublishResources publishes ResourceSlices through it, and when
  /// claim_source is unset, claims are read through it (an ApiClaimSource).
  /// Default: none.
  std::shared_ptr<k8s::Client> kube_client;

  /// Source of ResourceClaim objects for NodePrepareResources. Required unless
  /// kube_client is set.
  std::shared_ptr<ClaimSource> claim_source;

  /// How Helper::PublishResources publishes (the publisher's driver name,
  /// node name and logger are these Options' own). Default: the publisher's
  /// defaults.
  resourceslice::PublishingOptions resource_slices;

  /// Keep the prepared-claims checkpoint in plugin_data_dir. Turning it off
  /// makes every prepare call the driver. Default: true.
  bool checkpoint = true;

  /// Taking over a node from another driver of the same name (say, a Go
  /// driver this one replaces) that kept a checkpoint of its own at
  /// plugin_data_dir/checkpoint.json: given that file's content, when it is
  /// not a checkpoint of this SDK, the claims it records as prepared, with
  /// namespace and name (the orphan check looks them up), or an error when it
  /// is not that driver's either. Start records them as claims whose
  /// preparation started, so that the kubelet's unprepare of a running pod's
  /// claim reaches Driver::UnprepareResourceClaims, a prepare prepares it again
  /// (its allocation gives the same devices) and the orphan check unprepares
  /// those whose ResourceClaim is gone; it then replaces the file with its own
  /// atomically, before the kubelet can call. Default: none (such a file
  /// stops Start, naming it).
  std::function<absl::StatusOr<std::vector<k8s::ClaimRef>>(const std::string& content)> adopt_checkpoint;

  /// Keeping the node readable by that other driver, so that it can be
  /// rolled back to with pods running: given every claim the checkpoint
  /// records (prepared or being prepared, sorted by UID), that driver's
  /// checkpoint listing them as prepared. With it the Helper keeps its own
  /// checkpoint in plugin_data_dir/dra-cpp-checkpoint and replaces
  /// checkpoint.json with this content (temp file, fsync, rename; mode 0600)
  /// whenever which claims it records changes, while its own checkpoint's
  /// write syncs (on another thread) and before the driver is called or the
  /// kubelet is answered (a failed write fails that call; the next change
  /// writes it again). At Start, a checkpoint.json in this SDK's format (a release
  /// without this option ran since) is taken as the Helper's checkpoint, and
  /// one that differs from this content was changed by the other driver
  /// since: the claims adopt_checkpoint reads from it are the node's
  /// (recorded claims it no longer lists are dropped, claims it adds are
  /// adopted). Needs adopt_checkpoint. Must not call back into the Helper.
  /// Default: none.
  std::function<std::string(const std::vector<k8s::ClaimRef>& claims)> encode_foreign_checkpoint;

  /// How often the Helper looks for orphans: claims whose preparation started
  /// (say, before a crash) that the kubelet never asks about again. A started
  /// claim first seen at least one interval ago whose ResourceClaim the
  /// ClaimSource reports gone (NotFound, or replaced by one with another UID)
  /// is handed to Driver::UnprepareResourceClaims, under the same
  /// serialization as kubelet calls, and dropped from the checkpoint. Other
  /// errors keep the claim and reach Driver::HandleError once. A claim that is
  /// being prepared is never unprepared. Checks run at Start and then every
  /// interval on one Helper thread. 0 disables them; so does checkpoint off.
  /// Must not be negative. Default: 1 minute.
  absl::Duration orphan_check_interval = absl::Minutes(1);

  /// With a driver that reports health: the Helper sends the last list from
  /// Helper::PublishHealth again (each entry's last_updated now) whenever
  /// this long has passed without a new one, so that a driver that only
  /// reports changes keeps its devices from turning Unknown in the kubelet
  /// (30 s by default). It also keeps a wedged driver's health from decaying,
  /// which is why it is off by default, as in the Go helper (the driver
  /// resends, and the Helper warns through HandleError when it does not).
  /// Must be shorter than the devices' health check timeout to help, and not
  /// negative. Default: 0 (off).
  absl::Duration health_resend_interval = absl::ZeroDuration();

  /// How long Stop() lets in-flight calls finish before cancelling them.
  /// Default: 5 s.
  absl::Duration shutdown_grace = absl::Seconds(5);

  /// "host:port", "[v6]:port" or ":port" on which to serve Prometheus
  /// /metrics and /healthz over plain HTTP; port 0 picks one (see
  /// Helper::http_port). Default: empty, no HTTP server.
  std::string http_endpoint;

  /// The driver's own metrics: Prometheus text (with # HELP and # TYPE lines)
  /// that /metrics appends to the Helper's at each scrape. Called on the HTTP
  /// server's thread: must be thread-safe and quick. Default: none.
  std::function<std::string()> extra_metrics;

  /// Where the Helper logs. Default: klog text on stderr, verbosity 0.
  Logger logger;

  /// CDI spec files for devices that carry CDI edits. Default: see CdiOptions.
  CdiOptions cdi;

  /// KEP-5304 device metadata files (device_metadata.h), written per claim
  /// request when a prepared device carries Device::metadata, with their CDI
  /// specs in cdi.dir (cdi.enabled must be on). Written before the
  /// checkpoint records the claim as prepared, kept in it (re-created when a
  /// reboot emptied the spec dir), removed after the driver unprepared the
  /// claim. Default: off.
  DeviceMetadataOptions device_metadata;

  /// Refusing a device another claim holds. Default: on, see
  /// DeviceExclusivityOptions.
  DeviceExclusivityOptions device_exclusivity;
};

}  // namespace dra::kubeletplugin
