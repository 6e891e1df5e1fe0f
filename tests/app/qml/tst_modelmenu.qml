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

    QtObject {
        id: mockInference
        property bool loading: false
        property real loadProgress: 0.05
        property bool modelLoaded: true
        property bool generating: false
        property string modelPath: "/models/stories260K.gguf"
        property string modelName: "STORIES 260K"
        property string modelsDirectory: "/models"
        property int stops: 0
        function stop() { stops += 1 }
        function unloadModel() {}
    }

    // The model library's list of installed models (ModelLibrary.installed's roles), which the
    // menu shows as it is: there is no second list to keep in step with it.
    ListModel {
        id: mockInstalled
        ListElement { name: "stories260K"; path: "/models/stories260K.gguf"; problem: ""; error: "" }
        ListElement {
            name: "a-model-with-a-rather-long-file-name.Q4_K_M"
            path: "/models/a.gguf"
            problem: ""
            error: ""
        }
    }

    ModelMenu {
        id: button
        anchors.right: parent.right
        anchors.rightMargin: 4
        inference: mockInference
        models: mockInstalled
    }

    LoadProgress {
        id: progress
        y: 100
        width: parent.width
        inference: mockInference
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

        // A broken file is marked in the menu with what is wrong with it: a file that cannot be
        // read (the library's error) or one the engine cannot run (its problem).
        function test_brokenFilesAreMarked() {
            mockInstalled.append({ name: "cut", path: "/models/cut.gguf", problem: "",
                                   error: "cut.gguf: the file ends before its tensor data" })
            mockInstalled.append({ name: "odd", path: "/models/odd.gguf", error: "",
                                   problem: "architecture mamba is not supported yet" })
            button.menu.open()
            tryCompare(button.menu, "opened", true)
            compare(button.menu.itemAt(0).text, "stories260K")
            compare(button.menu.itemAt(2).text, "cut — cut.gguf: the file ends before its tensor data")
            compare(button.menu.itemAt(3).text, "odd — architecture mamba is not supported yet")
            button.menu.close()
            mockInstalled.remove(2, 2)
        }

        // A model the library finds (a download finished, a file copied in) is in the menu at
        // once, with nothing to refresh; one it loses leaves the menu.
        function test_menuIsTheLibrarysList() {
            mockInstalled.append({ name: "new", path: "/models/new.gguf", problem: "", error: "" })
            button.menu.open()
            tryCompare(button.menu, "opened", true)
            compare(button.menu.itemAt(2).text, "new")
            button.menu.close()
            mockInstalled.remove(2)
            button.menu.open()
            tryCompare(button.menu, "opened", true)
            verify(button.menu.itemAt(2).objectName !== "modelMenuItem")
            button.menu.close()
        }

        function test_loadingShowsTheEnginesProgressWithCancel() {
            verify(!progress.visible)
            mockInference.loadProgress = 0
            mockInference.loading = true
            verify(progress.visible)
            compare(button.text, "Loading…")
            verify(child(progress, "loadProgressBar").indeterminate, "before the first report")
            compare(child(progress, "loadProgressText").text, "Loading the model…")
            mockInference.loadProgress = 0.42
            verify(!child(progress, "loadProgressBar").indeterminate)
            compare(child(progress, "loadProgressBar").value, 0.42)
            compare(child(progress, "loadProgressText").text, "Loading the model… 42 %")
            mockInference.loadProgress = 0.05
            mouseClick(child(progress, "cancelLoadButton"))
            compare(mockInference.stops, 1)
            mockInference.loading = false
            verify(!progress.visible)
        }
    }
}
