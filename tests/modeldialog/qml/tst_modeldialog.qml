import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The model dialog against a mock library whose catalog filters itself in JavaScript the way
// ModelFilterModel does in C++: the search box, the size and "fits my GPU" filters drive it, an
// unsupported entry offers no download, progress follows the task, and delete asks first.
Item {
    id: root
    width: 1000
    height: 760

    QtObject {
        id: task
        property string state: "downloading"
        property real progress: 0.25
        property string statusText: "193.0 MiB of 737.2 MiB · 12.0 MiB/s · 1 min left"
        property string errorString: ""
        property bool canPause: state === "downloading"
        property bool canResume: state === "paused"
        property int pauses: 0
        function pause() { pauses++; state = "paused" }
        function resume() { state = "downloading" }
    }

    ListModel {
        id: mockCatalog
        property string searchText: ""
        property real maxSize: 0
        property bool fitsGpuOnly: false
        readonly property var entries: [
            { modelId: "llama-3b", name: "Llama 3.2 3B Instruct", size: 1.9e9, fitVerdict: "gpu", download: task },
            { modelId: "llama-1b", name: "Llama 3.2 1B Instruct", size: 0.8e9, fitVerdict: "gpu" },
            { modelId: "mistral-7b", name: "Mistral 7B Instruct", size: 4.1e9, fitVerdict: "nofit" },
            { modelId: "orca-mini", name: "Mini Orca", size: 2.0e9, fitVerdict: "gpu", installed: true },
            { modelId: "qwen2", name: "Qwen2 1.5B Instruct", size: 0.9e9, supported: false,
              reason: "architecture qwen2 is not supported yet" }
        ]
        function rebuild() {
            clear()
            const words = searchText.toLowerCase().split(" ").filter(w => w.length)
            for (const e of entries) {
                if (!words.every(w => e.name.toLowerCase().includes(w))) continue
                if (maxSize > 0 && e.size > maxSize) continue
                if (fitsGpuOnly && e.fitVerdict !== "gpu") continue
                const supported = e.supported !== false
                append(Object.assign({
                    description: "A model", sizeText: (e.size / 1e9).toFixed(1) + " GB",
                    parameters: "3 billion", quantization: "Q4_0", license: "", contextLength: 8192,
                    supported: true, reason: "", installed: false, fitVerdict: "",
                    fitText: supported ? (e.fitVerdict === "gpu" ? "fits on GPU" : "does not fit: needs 4.3 GiB, 3.1 GiB free") : "",
                    fitDetail: "" }, e))
            }
        }
        onSearchTextChanged: rebuild()
        onMaxSizeChanged: rebuild()
        onFitsGpuOnlyChanged: rebuild()
        Component.onCompleted: rebuild()
    }

    ListModel {
        id: mockInstalled
        property bool inspecting: false
        ListElement {
            name: "stories260K"; path: "/models/stories260K.gguf"; fileName: "stories260K.gguf"
            sizeText: "1.1 MiB"; ready: true; error: ""; architecture: "llama"; parameters: "292 K"
            quantization: "F32"; quantizationMix: "F32 100%"; contextLength: 128; problem: ""
            fitVerdict: "cpu"; fitText: "CPU only"; fitDetail: ""
        }
        ListElement {
            name: "broken"; path: "/models/broken.gguf"; fileName: "broken.gguf"
            sizeText: "20 B"; ready: true; error: "not a GGUF file (magic 'this')"; architecture: ""
            parameters: ""; quantization: ""; quantizationMix: ""; contextLength: 0; problem: ""
            fitVerdict: ""; fitText: ""; fitDetail: ""
        }
    }

    ListModel { id: mockDownloads }

    QtObject {
        id: library
        property var catalog: mockCatalog
        property var installed: mockInstalled
        property var downloads: mockDownloads
        property string modelsDirectory: "/models"
        property int contextLength: 4096
        property string deviceLabel: "GPU 0"
        property string errorMessage: ""
        property string infoMessage: ""
        property bool copying: false
        property string gpuProblem: ""
        property var calls: []
        function download(id) { calls.push("download " + id); return true }
        function deleteModel(path) { calls.push("delete " + path); return true }
        function removeDownload(key) { calls.push("remove " + key) }
        function addFromUrl(url, sha) { calls.push("url " + url); return true }
        function addLocalFile(url) { calls.push("file " + url); return true }
        function dismissError() { errorMessage = "" }
        function dismissInfo() { infoMessage = "" }
    }

    ModelDialog {
        id: dialog
        library: library
    }

    TestCase {
        name: "ModelDialog"
        when: windowShown

        function entry(id) { return findChild(dialog.contentItem, "catalogEntry_" + id) }
        function part(item, name) { return findChild(item, name) }
        function catalogList() { return findChild(dialog.contentItem, "catalogList") }
        function visibleIds() {
            const list = catalogList()
            waitForItemPolished(list)
            const ids = []
            for (let i = 0; i < list.count; ++i) ids.push(list.itemAtIndex(i).modelId)
            return ids
        }

        function init() {
            library.calls = []
            mockCatalog.searchText = ""
            mockCatalog.fitsGpuOnly = false
            mockCatalog.maxSize = 0
            library.gpuProblem = ""
            task.state = "downloading"
            task.progress = 0.25
            dialog.currentTab = 0
            dialog.open()
            tryCompare(dialog, "opened", true)
        }
        function cleanup() {
            dialog.close()
            tryCompare(dialog, "visible", false)
        }

        function test_searchFiltersTheList() {
            const search = findChild(dialog.contentItem, "catalogSearch")
            compare(catalogList().count, 5)
            search.forceActiveFocus()
            keyClick(Qt.Key_L); keyClick(Qt.Key_L); keyClick(Qt.Key_A); keyClick(Qt.Key_M); keyClick(Qt.Key_A)
            compare(mockCatalog.searchText, "llama", "the search box drives the catalog's filter")
            tryCompare(catalogList(), "count", 2)
            compare(visibleIds(), ["llama-3b", "llama-1b"])
            search.text = "gemma"
            tryCompare(catalogList(), "count", 0)
            search.text = ""
            tryCompare(catalogList(), "count", 5)
        }

        function test_fitsMyGpuAndSizeFilters() {
            const fits = findChild(dialog.contentItem, "fitsGpuFilter")
            mouseClick(fits)
            verify(mockCatalog.fitsGpuOnly)
            tryCompare(catalogList(), "count", 3)
            compare(visibleIds(), ["llama-3b", "llama-1b", "orca-mini"])
            for (let i = 0; i < catalogList().count; ++i)
                compare(part(catalogList().itemAtIndex(i), "fitBadge").verdict, "gpu")
            mouseClick(fits)
            verify(!mockCatalog.fitsGpuOnly)
            tryCompare(catalogList(), "count", 5)
            const size = findChild(dialog.contentItem, "sizeFilter")
            size.currentIndex = 1
            size.activated(1)
            compare(mockCatalog.maxSize, 2 * 1024 * 1024 * 1024)
            tryCompare(catalogList(), "count", 4)
            verify(visibleIds().indexOf("mistral-7b") < 0)
        }

        // No usable GPU: "Fits my GPU" says so instead of showing an empty list.
        function test_fitsMyGpuWithoutAGpuSaysSo() {
            library.gpuProblem = "No usable GPU was found, so models run on the CPU (no driver)."
            const empty = findChild(dialog.contentItem, "catalogEmpty")
            verify(!empty.visible)
            mouseClick(findChild(dialog.contentItem, "fitsGpuFilter"))
            mockCatalog.searchText = "nothing matches this"
            tryCompare(catalogList(), "count", 0)
            tryCompare(empty, "visible", true)
            compare(empty.text, library.gpuProblem)
            library.gpuProblem = ""
            compare(empty.text, "No model matches these filters.")
        }

        function test_unsupportedEntriesHaveNoDownloadButton() {
            const qwen = entry("qwen2")
            verify(qwen)
            verify(!part(qwen, "downloadButton").visible)
            verify(part(qwen, "unsupportedLabel").visible)
            compare(part(qwen, "unsupportedLabel").text, "Not supported yet: architecture qwen2 is not supported yet")
            verify(!part(qwen, "fitBadge").visible)

            const llama = entry("llama-1b")
            verify(part(llama, "downloadButton").visible)
            verify(!part(llama, "unsupportedLabel").visible)
            compare(part(llama, "fitBadge").text, "fits on GPU")
            mouseClick(part(llama, "downloadButton"))
            compare(library.calls, ["download llama-1b"])

            const installed = entry("orca-mini")
            verify(!part(installed, "downloadButton").visible)
            verify(part(installed, "installedLabel").visible)
            compare(part(entry("mistral-7b"), "fitBadge").text, "does not fit: needs 4.3 GiB, 3.1 GiB free")
        }

        function test_progressFollowsTheTask() {
            const e = entry("llama-3b")
            const controls = part(e, "downloadControls")
            verify(controls.visible)
            verify(!part(e, "downloadButton").visible, "no second download while one runs")
            const bar = part(controls, "downloadProgress")
            compare(bar.value, 0.25)
            compare(part(controls, "downloadPercent").text, "25%")
            compare(part(controls, "downloadStatus").text, task.statusText)
            task.progress = 0.6
            compare(bar.value, 0.6)
            compare(part(controls, "downloadPercent").text, "60%")
            verify(part(controls, "pauseButton").visible)
            verify(!part(controls, "resumeButton").visible)
            mouseClick(part(controls, "pauseButton"))
            compare(task.pauses, 1)
            verify(!part(controls, "pauseButton").visible)
            verify(part(controls, "resumeButton").visible)
            mouseClick(part(controls, "cancelButton"))
            compare(library.calls, ["remove llama-3b"])
            verify(!part(entry("llama-1b"), "downloadControls").visible)
        }

        function test_deleteAsksForConfirmation() {
            dialog.currentTab = 1
            const list = findChild(dialog.contentItem, "installedList")
            tryCompare(list, "count", 2)
            const first = findChild(list, "installedEntry_0")
            verify(part(first, "detailsLabel").text.indexOf("292 K parameters") >= 0)
            const broken = findChild(list, "installedEntry_1")
            verify(part(broken, "errorLabel").visible)
            verify(part(broken, "errorLabel").text.indexOf("not a GGUF file") >= 0)
            verify(!part(broken, "useButton").visible, "an unreadable file cannot be used")

            const confirm = findChild(dialog.contentItem, "installedPane").deleteDialog
            mouseClick(part(first, "deleteButton"))
            tryCompare(confirm, "opened", true)
            compare(library.calls, [], "nothing is deleted before the answer")
            verify(confirm.title.indexOf("stories260K.gguf") >= 0)
            confirm.reject()
            tryCompare(confirm, "visible", false)
            compare(library.calls, [])

            mouseClick(part(first, "deleteButton"))
            tryCompare(confirm, "opened", true)
            confirm.accept()
            compare(library.calls, ["delete /models/stories260K.gguf"])
        }
    }
}
