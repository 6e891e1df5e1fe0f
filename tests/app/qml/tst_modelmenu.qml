import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The header's model button: one display name (the file's, as in its menu), a menu that
// stays inside the window, and an honest loading state with Cancel.
Item {
    id: root
    width: 640
    height: 480

    // The real controller over a fake engine whose loading the test steps through.
    readonly property InferenceController inference: fixture.inference()
    // The model library's list of installed models (ModelLibrary.installed), which the menu
    // shows as it is: there is no second list to keep in step with it.
    readonly property InstalledModelModel installed: fixture.installed()
    Component.onCompleted: {
        fixture.addInstalled(installed, "/models/stories260K.gguf")
        fixture.addInstalled(installed, "/models/a-model-with-a-rather-long-file-name.Q4_K_M.gguf")
    }

    ModelMenu {
        id: button
        anchors.right: parent.right
        anchors.rightMargin: 4
        inference: root.inference
        models: root.installed
    }

    LoadProgress {
        id: progress
        y: 100
        width: parent.width
        inference: root.inference
    }

    TestCase {
        name: "ModelMenu"
        when: windowShown

        function child(item, name) {
            if (item.objectName === name) return item
            for (let i = 0; i < item.children.length; ++i) {
                const found = child(item.children[i], name)
                if (found) return found
            }
            return null
        }

        function initTestCase() {
            fixture.loadModel(root.inference, "/models/stories260K.gguf")
            fixture.loadStep(1)
            tryCompare(root.inference, "modelLoaded", true, 30000)
        }

        function test_displayNameIsTheMenusName() {
            compare(button.text, "stories260K  ▾")
            button.menu.open()
            tryCompare(button.menu, "opened", true)
            compare(button.menu.itemAt(0).text, "stories260K")
            button.menu.close()
        }

        function test_menuStaysInsideTheWindow() {
            button.menu.open()
            tryCompare(button.menu, "opened", true)
            const pos = button.mapToItem(root, button.menu.x, button.menu.y)
            verify(pos.x >= 0, "left edge " + pos.x)
            verify(pos.x + button.menu.width <= root.width, "right edge " + (pos.x + button.menu.width))
            for (let i = 0; i < 2; ++i) {
                const label = button.menu.itemAt(i).contentItem
                verify(label.implicitWidth <= label.width + 0.5,
                       "a whole file name: " + label.implicitWidth + " > " + label.width)
            }
            button.menu.close()
        }

        // A broken file is marked in the menu with what is wrong with it in plain words: a file
        // that cannot be read (the library's error, whose reader's message is behind Details),
        // or one the engine cannot run (its problem, already the app's words).
        function test_brokenFilesAreMarked() {
            fixture.addInstalled(root.installed, "/models/cut.gguf", "",
                                 "gguf: /models/cut.gguf: tensor 'output.weight' (offset 0, 4096 bytes) extends past the end of the file",
                                 "the file is incomplete (it ends too early); download it again")
            fixture.addInstalled(root.installed, "/models/odd.gguf",
                                 "architecture mamba is not supported yet")
            button.menu.open()
            tryCompare(button.menu, "opened", true)
            compare(button.menu.itemAt(0).text, "stories260K")
            verify(!child(button.menu.itemAt(0), "modelMenuDetailsToggle").visible)
            const cut = button.menu.itemAt(2)
            compare(cut.text, "cut — the file is incomplete (it ends too early); download it again")
            compare(child(cut, "modelMenuItemText").text, cut.text)
            // The reader's message, naming the file as the row does, only once asked for.
            const toggle = child(cut, "modelMenuDetailsToggle")
            const details = child(cut, "modelMenuDetails")
            verify(toggle.visible)
            compare(toggle.text, "Details")
            verify(!details.visible)
            // Where the menu has laid out its new rows (and the toggle is where it is drawn).
            waitForItemPolished(button.menu.contentItem)
            mouseClick(toggle)
            tryCompare(details, "visible", true)
            compare(details.text,
                    "gguf: cut.gguf: tensor 'output.weight' (offset 0, 4096 bytes) extends past the end of the file")
            compare(toggle.text, "Hide details")
            verify(button.menu.opened, "the toggle keeps the menu open")
            compare(root.inference.modelPath, "/models/stories260K.gguf")
            mouseClick(toggle)
            tryCompare(details, "visible", false)
            const odd = button.menu.itemAt(3)
            compare(odd.text, "odd — architecture mamba is not supported yet")
            verify(!child(odd, "modelMenuDetailsToggle").visible)
            button.menu.close()
            fixture.removeInstalled(root.installed, "/models/cut.gguf")
            fixture.removeInstalled(root.installed, "/models/odd.gguf")
        }

        // A file the library could not read but said nothing plain about still gets plain words.
        function test_unreadableFileWithoutSummary() {
            fixture.addInstalled(root.installed, "/models/raw.gguf", "", "gguf.io: read failed")
            button.menu.open()
            tryCompare(button.menu, "opened", true)
            compare(button.menu.itemAt(2).text, "raw — the file cannot be read as a model")
            button.menu.close()
            fixture.removeInstalled(root.installed, "/models/raw.gguf")
        }

        // A model the library finds (a download finished, a file copied in) is in the menu at
        // once, with nothing to refresh; one it loses leaves the menu.
        function test_menuIsTheLibrarysList() {
            fixture.addInstalled(root.installed, "/models/new.gguf")
            button.menu.open()
            tryCompare(button.menu, "opened", true)
            compare(button.menu.itemAt(2).text, "new")
            button.menu.close()
            fixture.removeInstalled(root.installed, "/models/new.gguf")
            button.menu.open()
            tryCompare(button.menu, "opened", true)
            verify(button.menu.itemAt(2).objectName !== "modelMenuItem")
            button.menu.close()
        }

        function test_loadingShowsTheEnginesProgressWithCancel() {
            verify(!progress.visible)
            fixture.loadModel(root.inference, "/models/a-model-with-a-rather-long-file-name.Q4_K_M.gguf")
            tryCompare(progress, "visible", true)
            compare(button.text, "Loading…")
            verify(child(progress, "loadProgressBar").indeterminate, "before the first report")
            compare(child(progress, "loadProgressText").text, "Loading the model…")
            fixture.loadStep(0.375)  // exact in the engine's float
            tryVerify(() => !child(progress, "loadProgressBar").indeterminate, 30000, "the engine's report")
            compare(child(progress, "loadProgressBar").value, 0.375)
            compare(child(progress, "loadProgressText").text, "Loading the model… 37 %")
            mouseClick(child(progress, "cancelLoadButton"))
            fixture.loadStep(1)  // the worker loads the previous model again
            tryCompare(root.inference, "loading", false, 30000)
            verify(!progress.visible)
            compare(root.inference.modelPath, "/models/stories260K.gguf")
            compare(button.text, "stories260K  ▾")
        }
    }
}
