import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Dialogs
import QtQuick.Layouts
import Ember

// Choosing, downloading and managing models: the catalog, the installed models and the
// downloads, each with a fit estimate; adds local files and links. library: a ModelLibrary.
Dialog {
    id: root
    property ModelLibrary library
    property ChatController chat              // "Use" loads the model
    property InferenceController inference    // which model is loaded
    property alias currentTab: tabs.currentIndex

    objectName: "modelDialog"
    title: qsTr("Models")
    modal: true
    padding: 16
    topPadding: 4
    width: parent ? Math.min(parent.width - 64, 900) : 900
    height: parent ? Math.min(parent.height - 48, 720) : 720

    function useModel(path) {
        if (root.chat) root.chat.loadModelFile(path)
        root.close()
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: 8
        TabBar {
            id: tabs
            objectName: "modelTabs"
            Layout.fillWidth: true
            TabButton { text: qsTr("Catalog") }
            TabButton { text: qsTr("Installed (%1)").arg(root.library.installed.count) }
            TabButton {
                objectName: "downloadsTab"
                text: root.library.downloads.count > 0 ? qsTr("Downloads (%1)").arg(root.library.downloads.count)
                                                       : qsTr("Downloads")
            }
        }
        Banner {
            objectName: "libraryError"
            Layout.fillWidth: true
            text: root.library.errorMessage
            error: true
            onDismissed: root.library.dismissError()
        }
        Banner {
            objectName: "libraryInfo"
            Layout.fillWidth: true
            text: root.library.infoMessage
            error: false
            onDismissed: root.library.dismissInfo()
        }
        StackLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            currentIndex: tabs.currentIndex
            CatalogPane { library: root.library }
            InstalledPane {
                objectName: "installedPane"
                library: root.library
                currentPath: root.inference ? root.inference.modelPath : ""
                onUseRequested: (path) => root.useModel(path)
            }
            DownloadsPane { library: root.library }
        }
    }

    footer: DialogButtonBox {
        Button {
            objectName: "addFileButton"
            text: qsTr("Add local file…")
            flat: true
            enabled: !root.library.copying
            DialogButtonBox.buttonRole: DialogButtonBox.ActionRole
            onClicked: fileDialog.open()
        }
        Button {
            objectName: "addUrlButton"
            text: qsTr("Add from URL…")
            flat: true
            DialogButtonBox.buttonRole: DialogButtonBox.ActionRole
            onClicked: urlDialog.open()
        }
        Button {
            text: qsTr("Close")
            DialogButtonBox.buttonRole: DialogButtonBox.RejectRole
        }
    }

    FileDialog {
        id: fileDialog
        title: qsTr("Add a GGUF model")
        nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("All files (*)")]
        onAccepted: {
            if (root.library.addLocalFile(selectedFile)) tabs.currentIndex = 1
        }
    }

    AddUrlDialog {
        id: urlDialog
        parent: Overlay.overlay
        anchors.centerIn: parent
        onSubmitted: (url, sha256) => {
            if (root.library.addFromUrl(url, sha256)) tabs.currentIndex = 2
        }
    }
}
