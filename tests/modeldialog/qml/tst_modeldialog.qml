import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The model dialog over a real ModelLibrary (tests/modeldialog/qml/main.cpp: a fake inspector, a
// folder of the test's own, a local server for one download): the search box, the size and
// "fits my GPU" filters drive the catalog, an unsupported entry offers no download, progress
// follows the task, and delete asks first.
Item {
    id: root
    width: 1000
    height: 760

    readonly property ModelLibrary library: fixture.library()

    ModelDialog {
        id: dialog
        library: root.library
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
            root.library.catalog.searchText = ""
            root.library.catalog.fitsGpuOnly = false
            root.library.catalog.maxSize = 0
            dialog.currentTab = 0
            dialog.open()
            tryCompare(dialog, "opened", true)
            // Every supported entry has its estimate.
            tryVerify(() => entry("llama-1b") && part(entry("llama-1b"), "fitBadge").verdict === "gpu", 30000)
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
            compare(root.library.catalog.searchText, "llama", "the search box drives the catalog's filter")
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
            verify(root.library.catalog.fitsGpuOnly)
            tryCompare(catalogList(), "count", 3)
            compare(visibleIds(), ["llama-3b", "llama-1b", "orca-mini"])
            for (let i = 0; i < catalogList().count; ++i)
                compare(part(catalogList().itemAtIndex(i), "fitBadge").verdict, "gpu")
            mouseClick(fits)
            verify(!root.library.catalog.fitsGpuOnly)
            tryCompare(catalogList(), "count", 5)
            const size = findChild(dialog.contentItem, "sizeFilter")
            size.currentIndex = 1
            size.activated(1)
            compare(root.library.catalog.maxSize, 2 * 1024 * 1024 * 1024)
            tryCompare(catalogList(), "count", 4)
            verify(visibleIds().indexOf("mistral-7b") < 0)
        }

        // No usable GPU: "Fits my GPU" says so instead of showing an empty list.
        function test_fitsMyGpuWithoutAGpuSaysSo() {
            const empty = findChild(dialog.contentItem, "catalogEmpty")
            verify(!empty.visible)
            fixture.setNoGpu(true)
            tryVerify(() => root.library.gpuProblem.length > 0, 30000, "the estimates found no GPU")
            mouseClick(findChild(dialog.contentItem, "fitsGpuFilter"))
            tryCompare(catalogList(), "count", 0)
            tryCompare(empty, "visible", true)
            compare(empty.text, root.library.gpuProblem)
            verify(empty.text.indexOf("No usable GPU") >= 0, empty.text)
            fixture.setNoGpu(false)
            tryCompare(root.library, "gpuProblem", "", 30000)
            root.library.catalog.searchText = "nothing matches this"
            tryCompare(catalogList(), "count", 0)
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
            verify(part(llama, "downloadButton").enabled)

            const installed = entry("orca-mini")
            verify(!part(installed, "downloadButton").visible)
            verify(part(installed, "installedLabel").visible)
            verify(part(entry("mistral-7b"), "fitBadge").text.startsWith("does not fit: needs 4.0 GiB"),
                   part(entry("mistral-7b"), "fitBadge").text)
        }

        // The local server sends a quarter of the file, then stalls.
        function test_progressFollowsTheTask() {
            const e = entry("llama-3b")
            verify(!part(e, "downloadControls").visible)
            mouseClick(part(e, "downloadButton"))
            const controls = part(e, "downloadControls")
            tryCompare(controls, "visible", true)
            verify(!part(e, "downloadButton").visible, "no second download while one runs")
            const bar = part(controls, "downloadProgress")
            tryCompare(bar, "value", 0.25, 30000)
            compare(part(controls, "downloadPercent").text, "25%")
            compare(part(controls, "downloadStatus").text, controls.task.statusText)
            verify(controls.task.statusText.length > 0)
            tryCompare(part(controls, "pauseButton"), "visible", true)
            verify(!part(controls, "resumeButton").visible)
            mouseClick(part(controls, "pauseButton"))
            tryCompare(controls.task, "state", "paused", 30000)
            verify(!part(controls, "pauseButton").visible)
            verify(part(controls, "resumeButton").visible)
            compare(bar.value, 0.25, "a paused download keeps its progress")
            mouseClick(part(controls, "cancelButton"))
            tryCompare(controls, "visible", false)
            compare(root.library.downloads.count, 0)
            verify(part(e, "downloadButton").visible)
        }

        function test_deleteAsksForConfirmation() {
            dialog.currentTab = 1
            const list = findChild(dialog.contentItem, "installedList")
            tryCompare(list, "count", 3)
            tryCompare(root.library.installed, "inspecting", false, 30000)
            waitForItemPolished(list)
            // By file name: broken.gguf, orca-mini.gguf, stories260K.gguf.
            const broken = findChild(list, "installedEntry_0")
            const stories = findChild(list, "installedEntry_2")
            verify(part(stories, "detailsLabel").text.indexOf("1 K parameters") >= 0,
                   part(stories, "detailsLabel").text)
            // In plain words; the reader's message (naming the file) once Details is clicked.
            verify(part(broken, "errorLabel").visible)
            compare(part(broken, "errorLabel").text, "Not a usable model: this is not a GGUF model file")
            verify(!part(broken, "errorDetails").visible)
            mouseClick(part(broken, "errorDetailsToggle"))
            tryCompare(part(broken, "errorDetails"), "visible", true)
            compare(part(broken, "errorDetails").text, "broken.gguf: not a GGUF file")
            verify(!part(stories, "errorDetailsToggle").visible)
            verify(!part(broken, "useButton").visible, "an unreadable file cannot be used")

            const confirm = findChild(dialog.contentItem, "installedPane").deleteDialog
            mouseClick(part(stories, "deleteButton"))
            tryCompare(confirm, "opened", true)
            verify(fixture.exists("stories260K.gguf"), "nothing is deleted before the answer")
            verify(confirm.title.indexOf("stories260K.gguf") >= 0)
            confirm.reject()
            tryCompare(confirm, "visible", false)
            verify(fixture.exists("stories260K.gguf"))

            mouseClick(part(stories, "deleteButton"))
            tryCompare(confirm, "opened", true)
            confirm.accept()
            verify(!fixture.exists("stories260K.gguf"))
            tryCompare(list, "count", 2)
        }
    }
}
