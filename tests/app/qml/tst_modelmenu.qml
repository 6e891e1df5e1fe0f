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
        property var installedModels: [{ name: "stories260K", path: "/models/stories260K.gguf", size: 1 },
                                       { name: "a-model-with-a-rather-long-file-name.Q4_K_M", path: "/models/a.gguf", size: 1 }]
        property int stops: 0
        function refreshModels() {}
        function stop() { stops += 1 }
        function unloadModel() {}
    }

    ModelMenu {
        id: button
        anchors.right: parent.right
        anchors.rightMargin: 4
        inference: mockInference
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

        // A broken file is marked in the menu with what is wrong with it.
        function test_brokenFilesAreMarked() {
            const before = mockInference.installedModels
            mockInference.installedModels = [before[0], { name: "cut", path: "/models/cut.gguf", size: 1,
                problem: "the file is incomplete: 1.0 GiB of at least 3.8 GiB; download it again" }]
            button.menu.open()
            tryCompare(button.menu, "opened", true)
            compare(button.menu.itemAt(0).text, "stories260K")
            compare(button.menu.itemAt(1).text,
                    "cut — the file is incomplete: 1.0 GiB of at least 3.8 GiB; download it again")
            button.menu.close()
            mockInference.installedModels = before
        }

        function test_loadingIsIndeterminateWithCancel() {
            verify(!progress.visible)
            mockInference.loading = true
            verify(progress.visible)
            compare(button.text, "Loading…", "no percentage that sits at 5%")
            verify(child(progress, "loadProgressBar").indeterminate)
            mouseClick(child(progress, "cancelLoadButton"))
            compare(mockInference.stops, 1)
            mockInference.loading = false
            verify(!progress.visible)
        }
    }
}
